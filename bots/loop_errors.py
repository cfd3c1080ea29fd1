"""What the bot's event loop does with an exception no task retrieved.

One kind is expected and named: the SDK answers a CLI's control request (a permission, an MCP tool call)
in a task of its own, and when that CLI has just exited (a stop, a park, a shutdown) its write fails with
``CLIConnectionError``; nobody awaits that task, so asyncio would log "Task exception was never retrieved"
with two tracebacks. That becomes one line. Everything else goes to the loop's default handler, as before.
The SDK is not imported for this: a bot at rest has not loaded it (~60 MB), and without it no such error exists.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

log = logging.getLogger("flower.bot")

__all__ = ["install_loop_errors", "on_loop_error"]


def on_loop_error(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    exc = context.get("exception")
    sdk = sys.modules.get("claude_agent_sdk")
    if sdk is not None and isinstance(exc, sdk.CLIConnectionError):
        log.info("a CLI had already exited when the SDK answered it (%s)", str(exc).splitlines()[0][:200])
        return
    loop.default_exception_handler(context)


def install_loop_errors() -> None:
    """On the running loop (the process's own, from its main coroutine)."""
    asyncio.get_running_loop().set_exception_handler(on_loop_error)
