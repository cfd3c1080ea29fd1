"""The terminal front end: Render (Event → lines), the stdin thread, and the controller around a run."""

from .controller import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, Controller
from .render import Render, clean
from .stdin import StdinReader, pick_option

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "Controller", "Render", "StdinReader", "clean",
           "pick_option"]
