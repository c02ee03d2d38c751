"""``python -m sandbox.runtimes build|tag|list [NAME ...]``: see :mod:`sandbox.runtimes.images`."""

from sandbox.runtimes.images import main

raise SystemExit(main())
