"""The bot's loop handler: an SDK task whose CLI had exited is one line, anything else the default."""

from __future__ import annotations

import asyncio
import logging

import pytest
from claude_agent_sdk import CLIConnectionError

from bots.loop_errors import on_loop_error


async def test_a_write_to_an_exited_cli_is_one_line_without_a_traceback(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.get_running_loop()
    exc = CLIConnectionError("Cannot write to terminated process (exit code: 143)")
    with caplog.at_level(logging.INFO):
        on_loop_error(loop, {"message": "Task exception was never retrieved", "exception": exc})
    assert [r.getMessage() for r in caplog.records] == [
        "a CLI had already exited when the SDK answered it (Cannot write to terminated process (exit code: 143))"]
    assert all(r.exc_info is None and r.levelno < logging.WARNING for r in caplog.records)


async def test_any_other_exception_reaches_the_default_handler(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.get_running_loop()
    with caplog.at_level(logging.ERROR):
        on_loop_error(loop, {"message": "Task exception was never retrieved", "exception": ValueError("x")})
    assert [r.levelno for r in caplog.records] == [logging.ERROR] and caplog.records[0].exc_info is not None
