"""Test fixture: exits before serving anything."""

import sys

sys.exit("this bot refuses to start")
