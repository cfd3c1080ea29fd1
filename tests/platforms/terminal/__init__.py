"""The terminal front end: its rendering and its stdin thread."""
