"""Protocol version 1 (proto package ``kryt.v1``). Do not edit."""
