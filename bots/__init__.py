"""Processes: the `flower` command, the offline demo, and the chat bots."""
