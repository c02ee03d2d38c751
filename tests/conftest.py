"""Settings the whole suite shares."""

import os

# As in ``referee/__init__.py``: test modules may import grpc before the referee does.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
