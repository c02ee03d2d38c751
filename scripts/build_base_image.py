#!/usr/bin/env python3
"""Build the sandbox's bot base image locally (no registry): see ``sandbox/base_image.py``.

python scripts/build_base_image.py              # build or reuse; prints the tag
python scripts/build_base_image.py --print-tag  # the tag the Docker backend will use
python scripts/build_base_image.py prune        # remove images of older builds
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sandbox.base_image import main

if __name__ == "__main__":
    raise SystemExit(main())
