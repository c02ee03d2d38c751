"""Build each runtime's image locally, the way the Python base image is built.

Two cached layers per runtime, each tagged by a hash of its inputs so a rebuild is a no-op:

1. ``kryt-runtime-root-<name>:<hash>``: ``debootstrap --variant=minbase`` + the runtime's
   Debian packages, turned into an image with ``docker import`` (slow: minutes, hundreds of
   MB for a JDK or a Go toolchain; rebuilt only when the package list changes).
2. ``kryt-runtime-<name>:<hash>``: the root plus ``/opt/kryt`` (the protocol's ``.proto``
   files and the runtime's set-up files), after ``setup.sh`` ran in it with no network
   (generating and pre-compiling the protocol bindings). For ``node``, ``node_modules`` with
   ``@grpc/grpc-js``, ``@grpc/proto-loader`` and npm (for the build step of submissions with
   a ``package.json``) comes from ``npm ci`` on the host against the lock file in
   ``files/node`` (the only step that uses a package registry).

Nothing comes from a container registry. ``python -m sandbox.runtimes build [NAME ...]``
builds (``all`` by default); ``tag NAME`` prints the tag without building; ``rootfs [NAME
...]`` makes the bwrap backend's read-only copy of each image's file system ahead of the
first bot (:mod:`sandbox.runtimes.rootfs`). The ``python`` runtime is the bot base image of
:mod:`sandbox.base_image`.
"""

from __future__ import annotations

import hashlib
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

from sandbox import base_image
from sandbox.base_image import BaseImageError, docker_cli, image_exists
from sandbox.errors import ImageBuildError
from sandbox.runtimes import Runtime, get_runtime, runtime_names

__all__ = ["SANDBOX_DEBS", "RuntimeImageSpec", "build_image", "image_tag", "root_debs", "root_tag"]

#: Bumped whenever the recipe changes in a way that must invalidate cached images.
RECIPE_VERSION = "1"
PROTO_ROOT = Path(__file__).resolve().parents[2] / "proto"
PROTO_FILES = ("kryt/v1/bot.proto", "grpc/health/v1/health.proto")
#: Seconds an image build may take before it is abandoned (a hung mirror, a stuck npm).
BUILD_SECONDS = 1800
#: Debian packages every runtime's root gets besides its own: ``python3`` runs the seccomp
#: filter's launcher before a bot or its build (:func:`sandbox.seccomp.confined_command`).
SANDBOX_DEBS = ("python3",)


def root_debs(runtime: Runtime) -> tuple[str, ...]:
    """The Debian packages of ``runtime``'s root: its own and :data:`SANDBOX_DEBS`."""
    return tuple(sorted({*runtime.debs, *SANDBOX_DEBS}))


@dataclass(frozen=True)
class RuntimeImageSpec:
    """Inputs of one runtime's image; every field goes into the cache key."""

    runtime: Runtime
    suite: str = "bookworm"
    mirror: str | None = field(default_factory=lambda: os.environ.get("KRYT_DEBIAN_MIRROR"))
    arch: str = field(default_factory=platform.machine)

    def root_key(self) -> str:
        """Hash of what goes into the debootstrapped root."""
        parts = [RECIPE_VERSION, self.suite, *root_debs(self.runtime), self.arch]
        return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

    def key(self) -> str:
        """Hash of the root plus the set-up files, the protos and the environment."""
        digest = hashlib.sha256(self.root_key().encode())
        digest.update(repr((self.runtime.env, self.runtime.npm)).encode())
        for rel, path in sorted(_setup_files(self.runtime)):
            digest.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()[:16]


def _setup_files(runtime: Runtime) -> Iterator[tuple[str, Path]]:
    """(path under /opt/kryt, source) of every file copied into the image."""
    for rel in PROTO_FILES:
        yield f"proto/{rel}", PROTO_ROOT / rel
    folder = runtime.files()
    if folder.is_dir():
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                yield f"setup/{path.relative_to(folder).as_posix()}", path


def root_tag(spec: RuntimeImageSpec) -> str:
    """Tag of the debootstrapped root of ``spec``'s runtime."""
    return f"kryt-runtime-root-{spec.runtime.name}:{spec.root_key()}"


def image_tag(name: str, spec: RuntimeImageSpec | None = None) -> str:
    """Tag of the runtime image the docker backend runs bots of runtime ``name`` on."""
    runtime = get_runtime(name)
    if runtime.name == "python":
        return base_image.bot_base_tag()
    spec = spec or RuntimeImageSpec(runtime)
    return f"{runtime.image_repository}:{spec.key()}"


def _npm_modules(runtime: Runtime, dest: Path) -> None:
    """``npm ci`` the runtime's lock file into ``dest/node_modules`` (pure JavaScript)."""
    npm = shutil.which("npm")
    if npm is None:
        raise BaseImageError("npm is not installed on the host; apt-get install npm")
    dest.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(runtime.files() / name, dest / name)
    cmd = [npm, "ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund"]
    proc = subprocess.run(
        cmd, cwd=dest, capture_output=True, check=False, timeout=BUILD_SECONDS, text=True
    )
    if proc.returncode != 0:
        raise BaseImageError(f"npm ci for the {runtime.name} runtime failed: {proc.stderr[-2000:]}")


def _context(spec: RuntimeImageSpec, work: Path) -> bytes:
    """The build context of the second layer: a Dockerfile and ``/opt/kryt``."""
    runtime = spec.runtime
    lines = [f"FROM {root_tag(spec)}"]
    lines += [f"ENV {key}={value}" for key, value in runtime.env]
    lines.append("COPY kryt/ /opt/kryt/")
    if (runtime.files() / "setup.sh").is_file():
        lines.append('RUN ["/bin/sh", "-eu", "/opt/kryt/setup/setup.sh"]')
    lines += ["WORKDIR /bot", ""]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        dockerfile = "\n".join(lines).encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        tar.addfile(info, io.BytesIO(dockerfile))
        for rel, path in _setup_files(runtime):
            tar.add(path, arcname=f"kryt/{rel}", filter=_world_readable)
        if runtime.npm:
            modules = work / "node"
            _npm_modules(runtime, modules)
            tar.add(modules / "node_modules", "kryt/node/node_modules", filter=_world_readable)
    return buffer.getvalue()


def _world_readable(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mode = 0o755 if info.isdir() or info.mode & 0o111 else 0o644
    return info


def _docker_build(tag: str, context: bytes) -> None:
    cmd = [docker_cli(), "build", "--network", "none", "--rm", "--force-rm", "-t", tag, "-"]
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    proc = subprocess.run(
        cmd, input=context, capture_output=True, check=False, timeout=BUILD_SECONDS
    )
    if proc.returncode != 0:
        out = (proc.stdout + proc.stderr).decode(errors="replace")[-4000:]
        raise BaseImageError(f"building {tag} failed:\n{out}")


def build_image(name: str, *, force: bool = False, suite: str = "bookworm") -> str:
    """Build (or reuse) the image of runtime ``name``; return its tag."""
    runtime = get_runtime(name)
    if runtime.name == "python":
        return base_image.build(base_image.BaseImageSpec(suite=suite), force=force)
    spec = RuntimeImageSpec(runtime, suite=suite)
    tag = image_tag(name, spec)
    lock = Path(tempfile.gettempdir()) / f"kryt-runtime-{runtime.name}.lock"
    with base_image.build_lock(lock), tempfile.TemporaryDirectory(prefix="kryt-rt-") as tmp:
        work = Path(tmp)
        if force or not image_exists(root_tag(spec)):
            rootfs = work / "rootfs"
            base_image.debootstrap_rootfs(
                rootfs, suite=spec.suite, debs=root_debs(runtime), mirror=spec.mirror
            )
            changes = ["ENV PATH=/usr/local/bin:/usr/bin:/bin", "ENV LANG=C.UTF-8"]
            base_image.import_rootfs(rootfs, root_tag(spec), changes)
        if force or not image_exists(tag):
            _docker_build(tag, _context(spec, work))
    return tag


def image_size(tag: str) -> int:
    """Size of a local image in bytes."""
    out = base_image.run_checked(
        [docker_cli(), "image", "inspect", "-f", "{{.Size}}", tag], quiet=True
    )
    return int(out.strip())


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``build [NAME ...]`` (default: every runtime), ``tag NAME``, ``list``, or
    ``rootfs [NAME ...]`` (make the bwrap backend's copy of each built image now)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m sandbox.runtimes", description=__doc__)
    parser.add_argument("command", choices=["build", "tag", "list", "rootfs"])
    parser.add_argument("names", nargs="*", help="runtimes (default: all)")
    parser.add_argument("--force", action="store_true", help="rebuild even if cached")
    parser.add_argument("--suite", default="bookworm", help="Debian suite to debootstrap")
    args = parser.parse_args(argv)
    names = args.names or list(runtime_names())
    try:
        if args.command == "list":
            for name in names:
                runtime = get_runtime(name)
                print(f"{runtime.name}\t{runtime.language}\t{image_tag(name)}")
            return 0
        if args.command == "tag":
            for name in names:
                print(image_tag(name))
            return 0
        if args.command == "rootfs":
            from sandbox.runtimes.rootfs import runtime_rootfs

            for name in names:
                if get_runtime(name).name != "python":  # bwrap runs python on the host's
                    print(f"{name}\t{runtime_rootfs(get_runtime(name))}", flush=True)
            return 0
        for name in names:
            started = time.monotonic()
            tag = build_image(name, force=args.force, suite=args.suite)
            seconds = time.monotonic() - started
            size = image_size(tag) / 1024 / 1024
            print(f"{name}\t{tag}\t{size:.0f} MB\t{seconds:.0f} s", flush=True)
    except (BaseImageError, ImageBuildError, ValueError, subprocess.TimeoutExpired) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
