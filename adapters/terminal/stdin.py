"""The input thread: reads stdin for the whole run and routes every line.

Three rules, each learned from a real failure:
- a daemon thread, not ``asyncio.to_thread(input)``: a blocked ``input()`` cannot be cancelled and
  ``asyncio.run`` would wait for it, so the user has to press Enter once more to quit;
- ``select()`` polling with a stop flag, not a blocking read: only then does ``stop()`` wake it;
- read all the time, not only while a question waits: otherwise what the human typed during hours
  of work sits in the terminal buffer and is swallowed as the answer to the next question.

It reads the file descriptor itself (``os.read``) rather than ``sys.stdin.readline()``: a buffered
text stream can hold several pasted lines that ``select()`` no longer reports as readable.

Ctrl-C arrives here as a byte, not as a signal (see ``ctrl_c_as_input``): a terminal's SIGINT goes
to the whole foreground process group, and the bundled CLI subprocesses catch it and quit mid-turn,
which would turn a cooperative interrupt into a crash.
"""

from __future__ import annotations

import codecs
import os
import select
import sys
import termios
import threading
from collections.abc import Callable
from typing import Any, Protocol

from .render import Render

ORACLE_PREFIXES = ("?", "？")  # ASCII and full-width: an IME user types the second
CTRL_C = "\x03"


def ctrl_c_as_input(fd: int) -> Callable[[], None] | None:
    """Make Ctrl-C on terminal ``fd`` a line-ending byte instead of SIGINT; returns the undo.

    VINTR is disabled, so the terminal signals nobody; VEOL becomes ^C, so in canonical mode the
    byte is handed to ``read()`` at once instead of waiting for Enter. Ctrl-Z and Ctrl-\\ keep
    working. None when ``fd`` is not a terminal.
    """
    try:
        if not os.isatty(fd):
            return None
        saved = termios.tcgetattr(fd)
        mode = termios.tcgetattr(fd)
        cc = list(mode[6])
        cc[termios.VINTR] = b"\x00"  # _POSIX_VDISABLE on Linux and macOS
        cc[termios.VEOL] = CTRL_C.encode()
        mode[6] = cc
        termios.tcsetattr(fd, termios.TCSANOW, mode)
    except (OSError, termios.error):
        return None

    def restore() -> None:
        try:
            termios.tcsetattr(fd, termios.TCSANOW, saved)
        except (OSError, termios.error):
            pass

    return restore


class Channel(Protocol):
    """What the reader needs from flower_core's HumanChannel."""

    def pending(self) -> list[Any]: ...
    def answer(self, ask_id: str, text: str) -> bool: ...
    def decline(self, ask_id: str, reason: str = "") -> bool: ...
    def send(self, text: str) -> Any: ...


def pick_option(text: str, options: list[str]) -> str:
    """A bare number 1..n stands for that option; anything else is the answer as typed."""
    if text.isdigit() and options and 1 <= int(text) <= len(options):
        return str(options[int(text) - 1])
    return text


class StdinReader:
    """Route typed lines: the interrupt prompt, then the oracle, then a waiting question, else the inbox.

    ``handle(line)`` is the routing and can be called directly; ``start()`` runs the reading thread.
    Callbacks run on this thread, so they must be thread-safe (HumanChannel's are;
    ``on_oracle`` should hand work to the event loop).
    """

    def __init__(self, channel: Channel | None, render: Render, *, fd: int | None = None,
                 on_oracle: Callable[[str], None] | None = None,
                 on_interrupt: Callable[[str], None] | None = None,
                 on_ctrl_c: Callable[[], None] | None = None, poll_s: float = 0.2) -> None:
        self.channel = channel
        self.render = render
        self.fd = fd
        self.on_oracle = on_oracle
        self.on_interrupt = on_interrupt
        self.on_ctrl_c = on_ctrl_c
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._armed = threading.Event()
        self._thread: threading.Thread | None = None
        self.eof = threading.Event()

    # -- the interrupt prompt ---------------------------------------------------------------
    @property
    def armed(self) -> bool:
        """True while the interrupt prompt waits for the words to send."""
        return self._armed.is_set()

    def arm_interrupt(self) -> None:
        self._armed.set()

    def pending_count(self) -> int:
        try:
            return len(self.channel.pending()) if self.channel is not None else 0
        except Exception:
            return 0

    # -- routing ------------------------------------------------------------------------------
    def handle(self, line: str) -> None:
        text = line.strip()
        if self._armed.is_set():
            self._armed.clear()
            if not text:
                self.render.say("  . not interrupted; it carries on", "dim")
            elif self.on_interrupt is not None:
                self.render.say(f"  ! interrupting with: {text}", "warn")
                self.on_interrupt(text)
            return
        if text.startswith(ORACLE_PREFIXES):
            question = text[1:].strip()
            if not question:
                return
            if self.on_oracle is None:
                self.render.say("  . no oracle in this run", "dim")
            else:
                self.render.say("  # asking the oracle (the run carries on)…", "dim")
                self.on_oracle(question)
            return
        ch = self.channel
        if ch is None:
            if text:
                self.render.say("  . nobody is listening to the inbox in this run", "dim")
            return
        pending = ch.pending()
        if pending:
            ask = pending[0]
            if not text:
                ch.decline(ask.id, "")
            elif not ch.answer(ask.id, pick_option(text, list(ask.options))):
                self.render.say("  . that question is no longer waiting", "dim")
            return
        if text and ch.send(text) is None:
            self.render.say("  x not queued: the run is not taking messages now", "error")
        # A queued message prints its receipt through the channel's own "queued" event.

    # -- the thread ---------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._loop, daemon=True, name="flower-stdin")
        self._thread.start()

    def stop(self, timeout: float = 1.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _loop(self) -> None:
        fd = self.fd if self.fd is not None else sys.stdin.fileno()
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        buf = ""
        while not self._stop.is_set():
            try:
                ready = select.select([fd], [], [], self.poll_s)[0]
                chunk = os.read(fd, 4096) if ready else None
            except (OSError, ValueError):  # closed or unselectable: treat as end of input
                chunk = b""
            if chunk is None:
                continue
            if not chunk:
                if buf.strip():
                    self._safe_handle(buf)
                self._at_eof()
                # Stay alive until stopped: the controller relies on this thread to take delivery
                # of SIGINT while the loop thread blocks it.
                self._stop.wait()
                return
            buf += decoder.decode(chunk)
            presses = buf.count(CTRL_C)
            if presses:
                # Like a shell: Ctrl-C drops the half-typed line, then reports each press.
                buf = buf.rsplit(CTRL_C, 1)[1]
                for _ in range(presses if self.on_ctrl_c is not None else 0):
                    self._safe_call(self.on_ctrl_c)  # type: ignore[arg-type]
            while "\n" in buf and not self._stop.is_set():
                line, buf = buf.split("\n", 1)
                self._safe_handle(line)

    def _safe_handle(self, line: str) -> None:
        self._safe_call(self.handle, line)

    def _safe_call(self, fn: Callable[..., None], *args: str) -> None:
        try:
            fn(*args)
        except Exception as exc:  # a bad line must not kill the reader
            self.render.say(f"  x could not route that line: {exc}", "error")

    def _at_eof(self) -> None:
        """End of input: nobody can answer any more, so skip what waits rather than leave it hanging."""
        self.eof.set()
        self._armed.clear()
        if self.channel is None:
            return
        try:
            for ask in self.channel.pending():
                self.channel.decline(ask.id, "")
        except Exception:
            pass
