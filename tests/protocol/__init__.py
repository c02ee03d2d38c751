"""Tests of the wire protocol: serde, generated code, gRPC service, health."""
