"""Control bot: well behaved; reports who it runs as."""

import os

from _serve import serve  # type: ignore[import-not-found]

serve(lambda: {"uid": os.getuid(), "pid": os.getpid(), "cwd": os.getcwd()})
