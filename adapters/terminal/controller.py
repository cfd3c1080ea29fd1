"""Controller: wires one workflow run to the terminal.

It owns the terminal-only scaffolding around a run: the input thread, Ctrl-C as a cooperative
interrupt, leaving on a second Ctrl-C or on SIGHUP/SIGTERM, the oracle's side questions, and the
closing summary. Nothing here knows how a run works; it talks to the Runtime only through
``interrupt``, ``rescue`` and ``total_cost``.

Ctrl-C on a terminal is read as a byte by the input thread (see stdin.ctrl_c_as_input) rather than
delivered as SIGINT, because SIGINT would also reach the CLI subprocesses in the same process group
and end them mid-turn. A SIGINT sent to this process alone (``kill -INT``) takes the same path.

Leaving is immediate: ``rt.rescue()`` records the step in flight as killed-by-signal, then the
process exits. A graceful cancel would take seconds (the CLI's shutdown) that a user who pressed
Ctrl-C twice, or a supervisor sending SIGTERM, did not ask for; the CLI subprocesses end on their
own when their stdin closes with this process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from flower_core import Event

from .render import Render
from .stdin import StdinReader, ctrl_c_as_input

EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED = 0, 1, 130
ORACLE_GRACE_S = 120.0  # how long to wait at exit for side questions still being answered


def hard_exit(code: int) -> None:
    """Flush what was printed and leave now, without unwinding the event loop."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


class Controller:
    """Drive ``wf.run(rt)`` with the terminal attached; ``await drive(wf)`` returns the exit code.

    ``interactive`` (default: stdin is a TTY) decides whether Ctrl-C becomes an interrupt; without
    it Python's default applies (KeyboardInterrupt ends the run; the in-flight step is still
    rescued). ``exit`` is how a second Ctrl-C or SIGHUP/SIGTERM leaves (default: ``hard_exit``).
    """

    def __init__(self, rt: Any, render: Render, *, channel: Any = None, oracle: Any = None,
                 interactive: bool | None = None, stdin_fd: int | None = None, read_stdin: bool = True,
                 exit: Callable[[int], None] = hard_exit) -> None:
        self.rt = rt
        self.render = render
        self.channel = channel
        self.oracle = oracle
        self.exit = exit
        fd = stdin_fd if stdin_fd is not None else _stdin_fd()
        self.interactive = (fd is not None and os.isatty(fd)) if interactive is None else interactive
        self.reader = StdinReader(channel, render, fd=fd, on_oracle=self._ask_oracle if oracle else None,
                                  on_interrupt=self._interrupt,
                                  on_ctrl_c=self._ctrl_c_key) if read_stdin and fd is not None else None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._restore_tty: Callable[[], None] | None = None
        self._started = time.monotonic()
        self._leaving = False
        self._oracles: set[Future[Any]] = set()
        self._signals: list[int] = []

    # -- the run ------------------------------------------------------------------------------
    def sink(self, ev: Event) -> None:
        """on_event: render it, let the oracle see it. Never raises."""
        self.render(ev)
        if self.oracle is not None:
            try:
                self.oracle.observe(ev)
            except Exception as exc:
                self.render.ui_errors.append(exc)

    async def drive(self, wf: Any, *, on_step: Callable[..., Any] | None = None) -> int:
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._started = time.monotonic()
        if self.reader is not None:
            if self.interactive and self.reader.fd is not None:
                self.render.write(self.render.hint_lines(oracle=self.oracle is not None))
                self._restore_tty = ctrl_c_as_input(self.reader.fd)
            self.reader.start()  # piped input is routed the same way, just without the hint
        self._install_signals(loop)
        failed_at: str | None = None
        try:
            ctx = await wf.run(self.rt, on_event=self.sink, on_step=on_step)
            failed_at = ctx.get("_failed_at") if hasattr(ctx, "get") else None
        except asyncio.CancelledError:  # KeyboardInterrupt outside a terminal: record, then let it unwind
            self._rescue()
            self._summary(None, interrupted=True)
            raise
        except Exception as exc:  # report it; a traceback is no use to the person at the terminal
            self.render.say(f"x the run crashed: {type(exc).__name__}: {exc}", "error")
            failed_at = "(crash)"
        finally:
            self._remove_signals(loop)
            self._tty_back()
            if self.reader is not None:
                self.reader.stop()
        await self._wait_oracles()
        self._summary(failed_at)
        return EXIT_FAILED if failed_at else EXIT_OK

    def _summary(self, failed_at: str | None, *, interrupted: bool = False) -> None:
        try:
            cost = float(self.rt.total_cost())
        except Exception:
            cost = 0.0
        try:  # the cost cap and the oracle's side questions, when this run has them
            aside = float(self.oracle.total_cost()) if self.oracle is not None else 0.0
            cap = getattr(getattr(self.rt, "budget", None), "cap", None)
        except Exception:
            aside, cap = 0.0, None
        self.render.write(self.render.summary_lines(failed_at=failed_at, cost_usd=cost, interrupted=interrupted,
                                                    duration_s=time.monotonic() - self._started,
                                                    aside_usd=aside, cap_usd=cap))

    # -- interrupt and leaving ----------------------------------------------------------------------
    def _interrupt(self, text: str) -> None:
        """From the input thread: the words typed after Ctrl-C."""
        try:
            self.rt.interrupt(text)
        except Exception as exc:
            self.render.say(f"  x interrupt failed: {exc}", "error")

    def _ctrl_c_key(self) -> None:
        """From the input thread: the Ctrl-C byte. Handled on the loop like the signal."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self.on_sigint)

    def on_sigint(self) -> None:
        """First Ctrl-C: warn, then wait for the words. Ctrl-C while that prompt waits: leave."""
        reader = self.reader
        if reader is None or not reader.running or reader.eof.is_set() or reader.armed:
            self.leave(EXIT_INTERRUPTED)
            return
        self.render.write(self.render.interrupt_lines(reader.pending_count()))
        reader.arm_interrupt()

    def leave(self, code: int) -> None:
        """Record the step in flight, print the summary, exit with ``code``."""
        if self._leaving:
            return
        self._leaving = True
        self.render.say("! leaving: the step in flight is recorded as killed-by-signal", "warn")
        self._rescue()
        self._tty_back()
        self._summary(None, interrupted=True)
        self.exit(code)

    def _rescue(self) -> None:
        try:
            self.rt.rescue()
        except Exception as exc:
            self.render.say(f"  x rescue failed: {exc}", "error")

    def _tty_back(self) -> None:
        if self._restore_tty is not None:
            self._restore_tty()
            self._restore_tty = None

    def _install_signals(self, loop: asyncio.AbstractEventLoop) -> None:
        wanted: list[tuple[int, Callable[[], None]]] = []
        for name in ("SIGTERM", "SIGHUP"):
            num = getattr(signal, name, None)
            if num is not None:
                wanted.append((num, functools.partial(self.leave, 128 + num)))
        if self.interactive:
            wanted.append((signal.SIGINT, self.on_sigint))
        for num, handler in wanted:
            try:
                loop.add_signal_handler(num, handler)
                self._signals.append(num)
            except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / platform
                pass

    def _remove_signals(self, loop: asyncio.AbstractEventLoop) -> None:
        for num in self._signals:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(num)
        self._signals.clear()

    # -- the oracle -----------------------------------------------------------------------------
    def _ask_oracle(self, question: str) -> None:
        """From the input thread: run the side question on the loop; print the answer when it comes."""
        if self._loop is None or self.oracle is None:
            return
        fut = asyncio.run_coroutine_threadsafe(self.oracle.ask(question), self._loop)
        self._oracles.add(fut)

        def done(f: Future[Any]) -> None:
            self._oracles.discard(f)
            if f.cancelled():
                return
            exc = f.exception()
            if exc is not None:
                self.render.write(self.render.oracle_lines(question, None, f"{type(exc).__name__}: {exc}"))
            else:
                self.render.write(self.render.oracle_lines(question, str(f.result())))

        fut.add_done_callback(done)

    async def _wait_oracles(self) -> None:
        pending = [f for f in self._oracles if not f.done()]
        if not pending:
            return
        self.render.say(f"(waiting for {len(pending)} oracle answer(s)…)", "dim")
        _, late = await asyncio.wait([asyncio.wrap_future(f) for f in pending], timeout=ORACLE_GRACE_S)
        for f in late:
            f.cancel()


def _stdin_fd() -> int | None:
    try:
        return sys.stdin.fileno() if sys.stdin is not None else None
    except (OSError, ValueError, AttributeError):
        return None
