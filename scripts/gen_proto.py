#!/usr/bin/env python3
"""Generate the ``kryt_proto`` package from ``proto/kryt/v1/*.proto`` (the only way to make it).

    python scripts/gen_proto.py          # (re)write kryt_proto/
    python scripts/gen_proto.py --check  # fail when kryt_proto/ differs from a fresh generation

protoc names the Python package after the proto package (``kryt.v1``), but ``kryt`` is the CLI
package; the generated imports are rewritten to ``kryt_proto.v1``. The output depends on the
exact versions of grpcio-tools and mypy-protobuf, which is why the ``dev`` extra pins them.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO_ROOT = ROOT / "proto"
PACKAGE = "kryt_proto"
OUTPUT = ROOT / PACKAGE

# Only import lines are rewritten: the serialized descriptor inside *_pb2.py also contains
# "kryt.v1" (the proto package name, which must stay as it is on the wire).
_IMPORT = re.compile(r"^(from|import) kryt\.v1\b", re.MULTILINE)

_INIT = '"""Generated gRPC/protobuf code for the Kryt Arena bot protocol. Do not edit."""\n'
_EXTRA_FILES = {
    "__init__.py": _INIT,
    "py.typed": "",
    "v1/__init__.py": '"""Protocol version 1 (proto package ``kryt.v1``). Do not edit."""\n',
}


class GenerationError(RuntimeError):
    """protoc failed or produced something unexpected."""


def _proto_files() -> list[Path]:
    files = sorted((PROTO_ROOT / "kryt").rglob("*.proto"))
    if not files:
        raise GenerationError(f"no .proto files under {PROTO_ROOT / 'kryt'}")
    return files


def generate(dest: Path) -> None:
    """Write the complete generated package into ``dest`` (which must not exist yet)."""
    from grpc_tools import protoc  # type: ignore[import-untyped]  # dev-only, imported lazily

    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory() as raw:
        out = Path(raw)
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            f"--plugin=protoc-gen-mypy={bin_dir / 'protoc-gen-mypy'}",
            f"--plugin=protoc-gen-mypy_grpc={bin_dir / 'protoc-gen-mypy_grpc'}",
            f"--mypy_out={out}",
            f"--mypy_grpc_out={out}",
            *(str(p.relative_to(PROTO_ROOT)) for p in _proto_files()),
        ]
        old_cwd = os.getcwd()
        os.chdir(ROOT)  # protoc resolves relative proto names against -I; keep cwd stable
        try:
            rc = protoc.main(args)
        finally:
            os.chdir(old_cwd)
        if rc != 0:
            raise GenerationError(f"protoc failed with exit code {rc}: {' '.join(args[1:])}")
        generated = out / "kryt"
        dest.mkdir(parents=True)
        for src in sorted(generated.rglob("*")):
            if src.is_dir():
                continue
            target = dest / src.relative_to(generated)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_IMPORT.sub(rf"\1 {PACKAGE}.v1", src.read_text()))
    for name, text in _EXTRA_FILES.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(text)


def _tree(root: Path) -> dict[str, str]:
    if not root.exists():
        return {}
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


def check() -> int:
    """Return 0 when the committed package equals a fresh generation, else print why."""
    with tempfile.TemporaryDirectory() as raw:
        fresh = Path(raw) / PACKAGE
        generate(fresh)
        want, have = _tree(fresh), _tree(OUTPUT)
    problems: list[str] = []
    for name in sorted(want.keys() | have.keys()):
        if name not in have:
            problems.append(f"missing: {PACKAGE}/{name}")
        elif name not in want:
            problems.append(f"unexpected (not generated): {PACKAGE}/{name}")
        elif want[name] != have[name]:
            diff = difflib.unified_diff(
                have[name].splitlines(),
                want[name].splitlines(),
                f"committed/{name}",
                f"fresh/{name}",
                lineterm="",
                n=1,
            )
            problems.append(f"stale: {PACKAGE}/{name}\n" + "\n".join(list(diff)[:20]))
    if problems:
        print("generated protocol code is stale; run `python scripts/gen_proto.py`:")
        print("\n".join(problems))
        return 1
    print(f"{PACKAGE}/ is up to date with proto/")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only verify, write nothing")
    opts = parser.parse_args(argv)
    if opts.check:
        return check()
    with tempfile.TemporaryDirectory(dir=ROOT) as raw:
        fresh = Path(raw) / PACKAGE
        generate(fresh)
        if OUTPUT.exists():
            shutil.rmtree(OUTPUT)
        shutil.move(str(fresh), OUTPUT)
    print(f"wrote {PACKAGE}/ from {PROTO_ROOT.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
