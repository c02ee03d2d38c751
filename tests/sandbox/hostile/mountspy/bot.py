"""Hostile: reads its own mount table and cgroup to learn where it runs on the host
(issue 13.10: bwrap showed the host path of the runtime directory in mountinfo)."""

from pathlib import Path

from _serve import serve  # type: ignore[import-not-found]


def report() -> dict[str, object]:
    return {
        "mountinfo": Path("/proc/self/mountinfo").read_text(errors="replace"),
        "cgroup": Path("/proc/self/cgroup").read_text(errors="replace"),
    }


serve(report)
