"""Tournaments: bots from the database, sandboxed, playing series in parallel, results stored.

This is the layer that joins the referee's series with the sandbox and the results database;
the referee's game and series loops (``referee.match``, ``referee.series``) know neither.
"""
