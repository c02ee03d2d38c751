"""The mc example bot (run it with `python bot.py [address]`)."""
