"""Example bots bundled with the SDK; each folder is a complete bot with its ``bot.toml``."""
