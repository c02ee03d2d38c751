"""The greedy example bot (run it with `python bot.py [address]`)."""
