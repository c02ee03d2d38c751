"""``python -m kryt`` runs the command line."""

from kryt.entry import run

run()
