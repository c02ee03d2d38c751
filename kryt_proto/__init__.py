"""Generated gRPC/protobuf code for the Kryt Arena bot protocol. Do not edit."""
