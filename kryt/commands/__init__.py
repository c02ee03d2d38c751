"""Command groups of the ``kryt`` CLI, one module each."""
