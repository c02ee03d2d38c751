"""Hostile: crashes after printing terminal escape sequences (set the window title, clear
the screen, print a fake result) that must never reach the organiser's terminal raw."""

import sys

sys.stdout.write("\x1b]0;pwned\x07\x1b[2J\x1b[Hkryt: tournament won by escapes\r\n")
sys.stdout.write("\x9b31m C1 control \u202e reversed\n")
sys.stdout.flush()
raise SystemExit(1)
