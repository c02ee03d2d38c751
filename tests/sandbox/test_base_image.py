"""The locally built base image: cache keys, the command line, and what is inside."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox import base_image
from sandbox.backend import Backend
from sandbox.base_image import BaseImageSpec, bot_base_tag, root_tag
from tests.services import require


def _project(root: Path) -> Path:
    (root / "sdk").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (root / "sdk" / "__init__.py").write_text("A = 1\n")
    return root


def test_keys_are_stable_and_track_their_inputs(tmp_path: Path) -> None:
    spec = BaseImageSpec(project_root=_project(tmp_path / "p"), wheels=("grpcio==1.0",))
    assert spec.root_key() == BaseImageSpec(wheels=("grpcio==1.0",)).root_key()
    assert spec.root_key() != BaseImageSpec(wheels=("grpcio==2.0",)).root_key()
    before = spec.project_key()
    assert before == spec.project_key()
    (tmp_path / "p" / "sdk" / "__init__.py").write_text("A = 2\n")
    assert spec.project_key() != before
    pycache = tmp_path / "p" / "sdk" / "__pycache__"
    pycache.mkdir()
    after = spec.project_key()
    (pycache / "x.pyc").write_bytes(b"junk")
    assert spec.project_key() == after  # byte-code caches do not count
    assert root_tag(spec).startswith("kryt-python-root:")
    assert bot_base_tag(spec).startswith("kryt-bot-base:")


def test_default_pins_follow_the_installed_versions() -> None:
    import grpc

    assert f"grpcio=={grpc.__version__}" in BaseImageSpec().wheels


def test_print_tag_builds_nothing() -> None:
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "scripts/build_base_image.py", "--print-tag"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == bot_base_tag()


def test_build_reports_a_missing_tool(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(base_image.BaseImageError, match="debootstrap is not installed"):
        base_image._build_root(BaseImageSpec(), tmp_path)


@pytest.mark.docker
def test_image_runs_python_with_grpc_and_the_sdk(docker_backend: Backend) -> None:
    client = docker_backend.client  # type: ignore[attr-defined]
    code = "import grpc, grpc_health.v1.health, google.protobuf, sdk, os; print(os.getuid())"
    out = client.containers.run(
        docker_backend.base_image,  # type: ignore[attr-defined]
        ["python3", "-c", code],
        user="65534:65534",
        network_mode="none",
        remove=True,
    )
    assert out.strip() == b"65534"


@pytest.mark.docker
def test_prune_removes_stale_tags_only(docker_backend: Backend) -> None:
    client = docker_backend.client  # type: ignore[attr-defined]
    current = docker_backend.base_image  # type: ignore[attr-defined]
    client.images.get(current).tag("kryt-bot-base", "stale0000000000")
    removed = base_image.prune()
    assert "kryt-bot-base:stale0000000000" in removed
    assert base_image.image_exists(current)


def test_prune_keeps_the_base_image_the_environment_names(
    docker_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """KRYT_SANDBOX_BASE_IMAGE names the base the Docker backend runs bots on: prune took
    only the sources' own tag for current and removed it (and every bot image built on it)
    once the sources had moved on, so every Docker bot then failed to start."""
    client = docker_backend.client  # type: ignore[attr-defined]
    current = docker_backend.base_image  # type: ignore[attr-defined]
    client.images.get(current).tag("kryt-bot-base", "configured0000000")
    named = "kryt-bot-base:configured0000000"
    monkeypatch.setenv("KRYT_SANDBOX_BASE_IMAGE", named)
    assert bot_base_tag() != named  # as when the sources moved on since it was built
    try:
        removed = base_image.prune()
        assert named not in removed and base_image.image_exists(named)
    finally:
        if base_image.image_exists(named):
            client.images.remove(named)


@pytest.mark.docker
@pytest.mark.timeout(900)
def test_prune_keeps_bot_images_built_on_a_current_runtime_image(docker_backend: Backend) -> None:
    """A bot image's tag ends with the id of the image it was built on: prune knew only the
    Python base's, and removed every current node, java, cpp, go and native bot image (each
    then built again at its next start)."""
    from sandbox.base_image import BaseImageError
    from sandbox.runtimes.images import build_image

    client = docker_backend.client  # type: ignore[attr-defined]
    try:
        runtime = build_image("cpp")
    except BaseImageError as exc:
        require(False, "the cpp runtime image", str(exc))
        raise
    runtime_id = client.images.get(runtime).id.removeprefix("sha256:")[:12]
    kept = f"kryt-bot:{'c' * 32}-{runtime_id}"
    stale = f"kryt-bot:{'d' * 32}-{'0' * 12}"
    for tag in (kept, stale):
        repository, name = tag.split(":")
        client.images.get(runtime).tag(repository, name)
    try:
        removed = base_image.prune()
        assert kept not in removed and base_image.image_exists(kept)
        assert stale in removed and not base_image.image_exists(stale)
    finally:
        for tag in (kept, stale):
            if base_image.image_exists(tag):
                client.images.remove(tag)
