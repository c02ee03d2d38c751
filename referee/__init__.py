"""The referee: rules core (``referee.rules``), match runner, series and tournaments.

Importing this package imports nothing heavy; the rules core is usable on its own.
"""
