"""The generated package: fresh, importable as ``kryt_proto``, and with the documented shape."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kryt_proto.v1 import bot_pb2, bot_pb2_grpc

ROOT = Path(__file__).resolve().parents[2]


def test_generated_code_is_fresh() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/gen_proto.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_generated_imports_point_at_kryt_proto_not_the_cli_package() -> None:
    sources = [
        p for p in (ROOT / "kryt_proto").rglob("*.py*") if p.suffix in (".py", ".pyi")
    ]  # not the bytecode Python caches beside them (without PYTHONDONTWRITEBYTECODE)
    assert len(sources) >= 4, sources
    for path in sources:
        text = path.read_text()
        assert "from kryt.v1" not in text and "import kryt.v1" not in text, path
    assert bot_pb2_grpc.BotStub.__module__ == "kryt_proto.v1.bot_pb2_grpc"


def test_service_shape_is_one_bidirectional_stream() -> None:
    service = bot_pb2.DESCRIPTOR.services_by_name["Bot"]
    assert service.full_name == "kryt.v1.Bot"
    (play,) = service.methods
    assert play.name == "Play" and play.client_streaming and play.server_streaming
    assert play.input_type.name == "RefereeMessage" and play.output_type.name == "BotMessage"


def test_stubs_ship_with_the_package() -> None:
    pkg = ROOT / "kryt_proto"
    assert (pkg / "py.typed").exists()
    assert (pkg / "v1" / "bot_pb2.pyi").exists() and (pkg / "v1" / "bot_pb2_grpc.pyi").exists()
