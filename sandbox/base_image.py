"""Build the bots' Python base image locally, without a container registry.

Two cached layers, each tagged by a hash of its inputs so re-running is a quick no-op:

1. ``kryt-python-root:<hash>``: ``debootstrap --variant=minbase bookworm`` + Debian's
   ``python3`` + offline wheels of grpcio, grpcio-health-checking and protobuf installed
   into ``/usr/local/lib/python3.11/dist-packages``, turned into an image with
   ``docker import`` (about a minute, ~140 MB; rebuilt only when the pins change).
2. ``kryt-bot-base:<hash>``: the root image plus this project's base install (a wheel of
   the source tree built with ``pip wheel --no-deps``), so bots can ``import sdk``. Rebuilt
   in seconds whenever the project's sources change.

Run ``python -m sandbox.base_image build`` (or ``scripts/build_base_image.py``) as root on a
Debian-like host with ``debootstrap`` and a Docker engine. ``--print-tag`` prints the tag
the docker backend will use without building anything; ``prune`` removes the images of
older builds (and the per-submission images built on them). This module uses only the standard
library and the ``docker`` command-line client, so it also runs before the project's
virtual environment exists.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import io
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.bot_runtime import runtime_files

__all__ = [
    "BaseImageError",
    "BaseImageSpec",
    "bot_base_tag",
    "build",
    "build_lock",
    "debootstrap_rootfs",
    "docker_cli",
    "image_exists",
    "import_rootfs",
    "main",
    "prune",
    "root_tag",
    "run_checked",
]

#: Bumped whenever the build recipe changes in a way that must invalidate cached images.
RECIPE_VERSION = "2"
#: Where Debian's python3.11 looks for locally installed packages.
SITE_PACKAGES = "/usr/local/lib/python3.11/dist-packages"
#: Packages the bot runtime needs; pinned to the versions installed next to this module.
RUNTIME_WHEELS = ("grpcio", "grpcio-health-checking", "protobuf")
#: Top-level packages copied from the project into the bot base image.
LOCK_PATH = Path(tempfile.gettempdir()) / "kryt-base-image.lock"


class BaseImageError(RuntimeError):
    """The base image could not be built (missing tool, failed download, engine error)."""


def _default_pins() -> tuple[str, ...]:
    pins = []
    for name in RUNTIME_WHEELS:
        try:
            pins.append(f"{name}=={importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            pins.append(name)
    return tuple(pins)


def _default_project_root() -> Path:
    return Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class BaseImageSpec:
    """Inputs of the base image build; every field goes into the cache key."""

    suite: str = "bookworm"
    mirror: str | None = field(default_factory=lambda: os.environ.get("KRYT_DEBIAN_MIRROR"))
    debs: tuple[str, ...] = ("python3",)
    wheels: tuple[str, ...] = field(default_factory=_default_pins)
    arch: str = field(default_factory=platform.machine)
    project_root: Path = field(default_factory=_default_project_root)

    def root_key(self) -> str:
        """Hash of everything that goes into the root layer."""
        parts = [RECIPE_VERSION, self.suite, *self.debs, "|", *self.wheels, self.arch]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

    def project_key(self) -> str:
        """Hash of the project sources that go into the bot base layer."""
        digest = hashlib.sha256(self.root_key().encode())
        for path in sorted(_project_files(self.project_root)):
            rel = path.relative_to(self.project_root).as_posix()
            digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()[:16]


def _project_files(root: Path) -> Iterator[Path]:
    yield root / "pyproject.toml"
    yield from runtime_files(root)


def root_tag(spec: BaseImageSpec) -> str:
    """Tag of the debootstrapped Python root image for ``spec``."""
    return f"kryt-python-root:{spec.root_key()}"


def bot_base_tag(spec: BaseImageSpec | None = None) -> str:
    """Tag of the bot base image (root image + this project) for ``spec``."""
    spec = spec or BaseImageSpec()
    return f"kryt-bot-base:{spec.project_key()}"


def docker_cli() -> str:
    """Path of the docker client; Debian's ``/usr/bin/docker`` wins over other copies."""
    if Path("/usr/bin/docker").exists():
        return "/usr/bin/docker"
    found = shutil.which("docker")
    if found is None:
        raise BaseImageError("no docker client found on PATH; install Debian's docker.io")
    return found


def run_checked(cmd: Sequence[str], *, stdin: bytes | None = None, quiet: bool = False) -> str:
    if not quiet:
        print("+", " ".join(cmd), file=sys.stderr, flush=True)
    proc = subprocess.run(list(cmd), input=stdin, capture_output=True, check=False)
    if proc.returncode != 0:
        # debootstrap reports some failures on stdout only: show the end of both.
        tail = (proc.stdout + proc.stderr).decode(errors="replace")[-2000:]
        raise BaseImageError(f"{cmd[0]} {cmd[1] if len(cmd) > 1 else ''} failed: {tail}")
    return proc.stdout.decode(errors="replace")


def image_exists(tag: str) -> bool:
    """True when the local engine has an image called ``tag``."""
    proc = subprocess.run([docker_cli(), "image", "inspect", tag], capture_output=True, check=False)
    return proc.returncode == 0


def _pip_platform_args(arch: str) -> list[str]:
    args = ["--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp"]
    args += ["--abi", "cp311", "--abi", "abi3", "--abi", "none"]
    for tag in ("manylinux2014", "manylinux_2_17", "manylinux_2_28", "manylinux_2_34"):
        args += ["--platform", f"{tag}_{arch}"]
    return [*args, "--platform", "any"]


def debootstrap_rootfs(
    rootfs: Path, *, suite: str, debs: Sequence[str], mirror: str | None = None
) -> None:
    """``debootstrap --variant=minbase`` a Debian root with ``debs`` (and their dependencies).

    Downloaded packages are kept in ``$KRYT_DEBOOTSTRAP_CACHE`` when it is set, so building
    several images (the Python base and the other runtimes) fetches each package once.
    """
    if shutil.which("debootstrap") is None:
        raise BaseImageError("debootstrap is not installed; apt-get install debootstrap")
    if os.geteuid() != 0:
        raise BaseImageError("debootstrap needs root; run the base image build as root")
    cmd = ["debootstrap", "--variant=minbase"]
    if debs:
        cmd.append(f"--include={','.join(debs)}")
    cache = os.environ.get("KRYT_DEBOOTSTRAP_CACHE")
    if cache:
        Path(cache).mkdir(parents=True, exist_ok=True)
        cmd.append(f"--cache-dir={Path(cache).resolve()}")
    cmd += [suite, str(rootfs)]
    if mirror:
        cmd.append(mirror)
    run_checked(cmd)


def import_rootfs(rootfs: Path, tag: str, changes: Sequence[str]) -> None:
    """Shrink ``rootfs`` (package caches, docs, manuals) and ``docker import`` it as ``tag``."""
    # Shrink the image: package caches, docs and locales are never used by a bot.
    for junk in ("var/cache/apt/archives", "var/lib/apt/lists", "usr/share/doc", "usr/share/man"):
        shutil.rmtree(rootfs / junk, ignore_errors=True)
    tar = subprocess.run(
        ["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."], capture_output=True, check=False
    )
    if tar.returncode != 0:
        raise BaseImageError(f"tar of the root file system failed: {tar.stderr.decode()[-500:]}")
    cmd = [docker_cli(), "import"]
    for change in changes:
        cmd += ["--change", change]
    run_checked([*cmd, "-", tag], stdin=tar.stdout)


def _build_root(spec: BaseImageSpec, work: Path) -> None:
    rootfs = work / "rootfs"
    debootstrap_rootfs(rootfs, suite=spec.suite, debs=spec.debs, mirror=spec.mirror)
    wheels = work / "wheels"
    pip = [sys.executable, "-m", "pip"]
    run_checked(
        [*pip, "download", "-q", "-d", str(wheels), *_pip_platform_args(spec.arch), *spec.wheels]
    )
    target = rootfs / SITE_PACKAGES.lstrip("/")
    install = [*pip, "install", "-q", "--no-index", "--find-links", str(wheels)]
    run_checked([*install, "--target", str(target), *_pip_platform_args(spec.arch), *spec.wheels])
    changes = ["ENV PATH=/usr/local/bin:/usr/bin:/bin", "ENV LANG=C.UTF-8", "WORKDIR /bot"]
    import_rootfs(rootfs, root_tag(spec), changes)


def _build_bot_base(spec: BaseImageSpec, work: Path) -> None:
    pip = [sys.executable, "-m", "pip"]
    dist = work / "dist"
    site = work / "site"
    # Build from a copy so setuptools' build/ and egg-info never land in the source tree.
    src = work / "src"
    src.mkdir()
    for path in _project_files(spec.project_root):
        dest = src / path.relative_to(spec.project_root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest)
    readme = spec.project_root / "README.md"
    if readme.exists():
        shutil.copy2(readme, src / "README.md")
    # Without network access to an index, build with the setuptools we already have.
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    run_checked([*pip, "wheel", "-q", "--no-deps", *isolation, "-w", str(dist), str(src)])
    wheel = next(dist.glob("*.whl"))
    run_checked(
        [*pip, "install", "-q", "--no-deps", "--no-compile", "--target", str(site), str(wheel)]
    )
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        dockerfile = f"FROM {root_tag(spec)}\nCOPY site/ {SITE_PACKAGES}/\n".encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
        tar.add(site, arcname="site", filter=_world_readable)
    run_checked(
        [docker_cli(), "build", "-q", "-t", bot_base_tag(spec), "-"], stdin=context.getvalue()
    )


def _world_readable(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mode = 0o755 if info.isdir() or info.mode & 0o111 else 0o644
    return info


@contextlib.contextmanager
def build_lock(lock_path: Path = LOCK_PATH) -> Iterator[None]:
    """Serialise builds across processes (pytest-xdist workers build on first use)."""
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build(spec: BaseImageSpec | None = None, *, force: bool = False) -> str:
    """Build (or reuse) the root and bot base images; return the bot base image tag."""
    spec = spec or BaseImageSpec()
    with build_lock(), tempfile.TemporaryDirectory(prefix="kryt-base-") as tmp:
        work = Path(tmp)
        if force or not image_exists(root_tag(spec)):
            _build_root(spec, work)
        if force or not image_exists(bot_base_tag(spec)):
            _build_bot_base(spec, work)
    return bot_base_tag(spec)


def prune(spec: BaseImageSpec | None = None) -> list[str]:
    """Remove base and bot images that the current sources no longer use; return their tags.

    The base image ``KRYT_SANDBOX_BASE_IMAGE`` names is in use too (the Docker backend runs
    bots on it), and so are the bot images built on it or on a current runtime image (node,
    java, cpp, go, native). Images still used by a container are kept (``docker rmi``
    refuses them). The untagged build stages a build left (a runner killed mid-build) go
    too, once they are half an hour old.
    """
    from sandbox.docker_backend import BUILD_STAGE, MARK_KEY
    from sandbox.runtimes import runtime_names
    from sandbox.runtimes.images import image_tag as runtime_image_tag

    spec = spec or BaseImageSpec()
    bases = {bot_base_tag(spec)}
    if configured := os.environ.get("KRYT_SANDBOX_BASE_IMAGE"):
        bases.add(configured)
    bases.update(runtime_image_tag(name) for name in runtime_names() if name != "python")
    keep = {root_tag(spec), *bases}
    base_ids = set()  # a bot image's tag ends with the id of the base it was built on
    for base in bases:
        if image_exists(base):
            fmt = "{{.Id}}"
            out = run_checked([docker_cli(), "image", "inspect", "-f", fmt, base], quiet=True)
            base_ids.add(out.strip().removeprefix("sha256:")[:12])
    removed = []
    for repo in ("kryt-python-root", "kryt-bot-base", "kryt-bot"):
        listing = run_checked(
            [docker_cli(), "images", "--format", "{{.Repository}}:{{.Tag}}", repo], quiet=True
        )
        for tag in listing.split():
            built_on_a_base = repo == "kryt-bot" and tag.endswith(tuple(base_ids))
            if tag in keep or (base_ids and built_on_a_base):
                continue
            proc = subprocess.run([docker_cli(), "rmi", tag], capture_output=True, check=False)
            if proc.returncode == 0:
                removed.append(tag)
    # Only stages older than any build can run: a running build's newest step is untagged
    # and childless for a moment between two steps, and must not be taken from under it.
    stages = ["image", "prune", "--force", "--filter", f"label={MARK_KEY}={BUILD_STAGE}"]
    stages += ["--filter", "until=30m"]
    count = _prune_build_stages([docker_cli(), *stages], removed)
    if count:
        removed.append(f"{count} untagged build-stage layers")
    return removed


def _prune_build_stages(cmd: list[str], removed: Sequence[str]) -> int:
    """Run ``docker image prune`` (``cmd``) and return how many layers it deleted; while
    the engine runs another prune (a build ending, an operator's), wait our turn as the
    Docker backend does. Raises BaseImageError, naming what was already ``removed``, when
    it still fails: an engine that pruned nothing must not read as one with nothing to
    prune."""
    from sandbox.docker_backend import PRUNE_RETRY_WAITS

    waits = iter(PRUNE_RETRY_WAITS)
    while True:
        pruned = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if pruned.returncode == 0:
            return pruned.stdout.count("deleted: ")
        busy = "prune operation is already running" in pruned.stderr
        wait = next(waits, None) if busy else None
        if wait is None:
            done = f" (removed before: {', '.join(removed)})" if removed else ""
            raise BaseImageError(
                f"could not remove the untagged build stages{done}: {pruned.stderr.strip()}"
            )
        time.sleep(wait)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``build`` (default) or ``--print-tag``."""
    parser = argparse.ArgumentParser(prog="python -m sandbox.base_image", description=__doc__)
    parser.add_argument("command", nargs="?", default="build", choices=["build", "tag", "prune"])
    parser.add_argument("--print-tag", action="store_true", help="print the tag, build nothing")
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    parser.add_argument("--suite", default="bookworm", help="Debian suite to debootstrap")
    args = parser.parse_args(argv)
    spec = BaseImageSpec(suite=args.suite)
    if args.print_tag or args.command == "tag":
        print(bot_base_tag(spec))
        return 0
    try:
        if args.command == "prune":
            for tag in prune(spec):
                print(f"removed {tag}")
            return 0
        tag = build(spec, force=args.force)
    except BaseImageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(tag)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
