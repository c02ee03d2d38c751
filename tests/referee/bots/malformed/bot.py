"""Test fixture: replies something that is not an action at all."""

from sdk import Bot, serve


class Malformed(Bot):
    def act(self, view):  # type: ignore[no-untyped-def]
        return "dance the kazachok"


if __name__ == "__main__":
    serve(Malformed())
