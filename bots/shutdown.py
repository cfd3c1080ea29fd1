"""Bounded shutdown: after SIGTERM/SIGINT the process is gone within `stop_after_s`, whatever hangs.

    first signal   → `stop` is set: the process shuts down gracefully, step by step (`with clock.step(…)`)
    the deadline   → one line naming the step still going, the CLI children killed, exit code 1
    second signal  → the CLI children killed, exit at once (128 + the signal's number)

The deadline is a timer thread, not a task: it fires even when the event loop is stuck in a close
that never returns. The signal handlers are Python's own (not the loop's), so a planned shutdown is
known as such before the loop sees the CLI children that the same signal ended (a terminal's Ctrl-C
and systemd signal the whole process group): `QuietPlannedExits` then drops exactly the SDK's
"Fatal error in message reader: … exit code 143" line for each of them, and nothing else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType

from adapters.ops.procs import cli_children, kill_trees

__all__ = ["EXIT_FORCED", "QuietPlannedExits", "StopClock"]

log = logging.getLogger("flower.shutdown")

EXIT_FORCED = 1
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopClock:
    def __init__(self, stop_after_s: float, *, name: str = "flower") -> None:
        self.stop_after_s, self.name = stop_after_s, name
        self.planned = False  # a signal asked this process to stop
        self._step: str | Callable[[], str] = "starting up"
        self._timer: threading.Timer | None = None
        self._stop: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.on_stop: list[Callable[[], object]] = []  # called on the loop when the first signal arrives
        self._wakeup: socket.socket | None = None  # the loop reads it; signals write to its other end
        self._wake: socket.socket | None = None

    # ---- signals ---------------------------------------------------------------------------------
    def install(self, stop: asyncio.Event) -> None:
        """Handle SIGINT/SIGTERM from now on (call on the running loop, in the main thread)."""
        self._stop, self._loop = stop, asyncio.get_running_loop()
        # A signal may land on any thread; the wakeup socket makes the loop's select return at once, so
        # the main thread runs the handler before it reads anything else (e.g. a CLI's end of file).
        self._wakeup, self._wake = socket.socketpair()
        for sock in (self._wakeup, self._wake):
            sock.setblocking(False)
        signal.set_wakeup_fd(self._wake.fileno(), warn_on_full_buffer=False)
        self._loop.add_reader(self._wakeup.fileno(), self._drain)
        for sig in SIGNALS:
            signal.signal(sig, self._on_signal)

    def _drain(self) -> None:
        if self._wakeup is not None:
            with contextlib.suppress(OSError):
                self._wakeup.recv(4096)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.planned:
            self._exit_now(signum)
            return
        self.planned = True
        self._arm()
        if self._loop is not None and self._stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop is closed: the process is exiting anyway
                self._loop.call_soon_threadsafe(self._begin)

    def _begin(self) -> None:
        for hook in self.on_stop:
            with contextlib.suppress(Exception):
                hook()
        if self._stop is not None:
            self._stop.set()

    def _arm(self) -> None:
        self._timer = threading.Timer(self.stop_after_s, self._deadline)
        self._timer.daemon = True  # it must not keep a finished process alive, and must outlive a stuck one
        self._timer.start()

    # ---- steps -----------------------------------------------------------------------------------
    @contextlib.contextmanager
    def step(self, what: str | Callable[[], str]) -> Iterator[None]:
        """Name what the shutdown is doing now (a callable is read when the deadline needs it)."""
        before, self._step = self._step, what
        try:
            yield
        finally:
            self._step = before

    def mark(self, what: str) -> None:
        """Name what the process does from now on, outside any step ("serving", "exiting")."""
        self._step = what

    def stuck(self) -> str:
        what = self._step
        try:
            return what() if callable(what) else what
        except Exception as exc:  # read from the timer thread while the loop changes things
            return f"(could not say: {exc!r})"

    # ---- the hard ends ---------------------------------------------------------------------------
    def _deadline(self) -> None:
        cli = cli_children()
        self._say(f"{self.name}: shutdown still stuck after {self.stop_after_s:g}s in: {self.stuck()}; "
                  f"killing {len(cli)} CLI process(es) and exiting")
        kill_trees(cli)
        _flush()
        os._exit(EXIT_FORCED)

    def _exit_now(self, signum: int) -> None:
        cli = cli_children()
        self._say(f"{self.name}: second signal: exiting now (killing {len(cli)} CLI process(es))")
        kill_trees(cli)
        _flush()
        os._exit(128 + signum)

    @staticmethod
    def _say(line: str) -> None:
        """Log one line, but never wait long for it: the loop may hold the handler's lock forever."""
        writer = threading.Thread(target=log.warning, args=(line,), daemon=True)
        writer.start()
        writer.join(1.0)


def _flush() -> None:
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


class QuietPlannedExits(logging.Filter):
    """On the SDK's query logger: during a planned shutdown, drop its report of a CLI that a signal ended."""

    LOGGER = "claude_agent_sdk._internal.query"
    SIGNAL_EXIT = re.compile(r"exit code:? (?:-(?:2|9|15)|130|137|143)\b")

    def __init__(self, clock: StopClock) -> None:
        super().__init__()
        self.clock = clock

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.clock.planned:
            return True
        message = record.getMessage()
        return not (message.startswith("Fatal error in message reader") and self.SIGNAL_EXIT.search(message))

    @classmethod
    def install(cls, clock: StopClock) -> QuietPlannedExits:
        quiet = cls(clock)
        logging.getLogger(cls.LOGGER).addFilter(quiet)
        return quiet
