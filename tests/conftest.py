"""Settings the whole suite shares."""

# Test modules may import grpc before the referee does: gRPC's defaults
# (``referee.GRPC_DEFAULTS``) are set first, as in every process of ours.
import referee  # noqa: F401
