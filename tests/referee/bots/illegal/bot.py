"""Test fixture: plays legally twice, then a well-formed action that is not legal."""

from sdk import Bot, serve


class Illegal(Bot):
    moves = 0

    def on_game_start(self, game: object) -> None:
        self.moves = 0

    def act(self, view):  # type: ignore[no-untyped-def]
        self.moves += 1
        if self.moves < 3:
            return view.legal_actions[0]
        return "take" if not view.pile else "lead " + str(view.hand[0])


if __name__ == "__main__":
    serve(Illegal())
