"""Test fixture: allocates memory without end when asked to move."""

from sdk import Bot, serve


class MemHog(Bot):
    def act(self, view):  # type: ignore[no-untyped-def]
        hoard = []
        while True:
            hoard.append(bytearray(16 * 1024 * 1024))


if __name__ == "__main__":
    serve(MemHog())
