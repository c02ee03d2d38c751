"""What makes a Dask scheduler address well formed, checked before anything is opened or
connected: a typo (``tcp://HOST`` without its port, a port that is no number) is bad input to
fix, not a scheduler to start. Plain parsing, so that the command line can check it without
importing distributed."""

from __future__ import annotations

SCHEDULER_EXAMPLE = "tcp://HOST:8786"

HOST_PORT_SCHEMES = frozenset({"tcp", "tls", "ws", "wss"})
"""distributed's address schemes whose location is a host and a port."""

OTHER_SCHEMES = frozenset({"inproc", "ucx"})
"""distributed's other schemes (their locations are not checked here)."""


def scheduler_address_problem(address: str) -> str | None:
    """Why ``address`` is not a Dask scheduler address (None when it is well formed)."""
    scheme, separator, location = address.partition("://")
    if not separator:
        return f"write it as {SCHEDULER_EXAMPLE}"
    if scheme not in HOST_PORT_SCHEMES | OTHER_SCHEMES:
        known = ", ".join(sorted(HOST_PORT_SCHEMES | OTHER_SCHEMES))
        return f"unknown scheme {scheme!r} (one of {known}), e.g. {SCHEDULER_EXAMPLE}"
    if scheme in OTHER_SCHEMES:
        return None if location else f"nothing after {scheme}://"
    if location.startswith("["):  # an IPv6 address: [::1]:8786
        host, bracket, rest = location[1:].partition("]")
        if not bracket:
            return f"no ']' closes the IPv6 address in {location!r}"
        if rest and not rest.startswith(":"):
            return f"{rest!r} after the IPv6 address is no ':PORT'"
        port = rest[1:] if rest else ""
        has_port = bool(rest)
    else:
        host, colon, port = location.rpartition(":")
        has_port = bool(colon)
        if not has_port:
            host = location
    if not host:
        return f"no host in {location!r}, e.g. {SCHEDULER_EXAMPLE}"
    if "/" in host or any(c.isspace() for c in host):
        return f"{host!r} is no host name"
    if not has_port:
        return f"no port after {host!r}: add one, e.g. {SCHEDULER_EXAMPLE}"
    if not (port.isascii() and port.isdigit()) or not 1 <= int(port) <= 65535:
        return f"port {port!r} is not a number from 1 to 65535"
    return None
