"""Tests of the bot SDK: bots, local play, tracker, determinization, check, template."""
