"""The ``kryt`` command line: one group per kind of user (bot authors, organisers, everyone)."""
