"""The other bot: well behaved; its code holds a secret the snoop must not find."""

from _serve import serve  # type: ignore[import-not-found]

SECRET = "KRYT-VICTIM-SECRET-7f3a"
serve(lambda: {"secret_len": len(SECRET)})
