"""Handoff policy: when a session's context is nearly full, it writes a handoff document and a
fresh session takes over (instead of the CLI's auto-compact summarising history behind our back).

This module holds the pure parts: the window guess and what overflows taught it, the thresholds,
the overflow signal, the prompts, and where the document lands on disk. The document itself is
``document.HandoffDoc``. Defaults, thresholds and the calibration file are the original flower's.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

from flower_core.lang import catalogue

STANDARD_WINDOW = 200_000
LARGE_WINDOW = 1_000_000
# "claude-x[1m]", "claude-x-1m", "1M": a standalone 1m token marks the long-context variant.
_ONE_M = re.compile(r"(?:^|[^a-z0-9])1m(?:[^a-z0-9]|$)", re.I)
_MODEL_VARS = ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL")


WINDOW_VAR = "FLOWER_WINDOW"
CALIBRATION_FILE = ".windows"


def _lookup(name: str, env: Mapping[str, str] | None) -> str:
    """``name`` from ``env`` (the runtime's), else from the process environment."""
    return ((env or {}).get(name) or os.environ.get(name) or "").strip()


def configured_window(env: Mapping[str, str] | None = None) -> int | None:
    """``FLOWER_WINDOW`` from ``env``, then ``os.environ``: a positive integer of tokens, else None.

    The window belongs to the gateway (like its URL), so it can be set once in the environment;
    a value that is not a positive integer counts as unset rather than shrinking the window to nothing.
    """
    raw = _lookup(WINDOW_VAR, env)
    if not raw:
        return None
    try:
        tokens = int(raw)
    except ValueError:
        return None
    return tokens if tokens > 0 else None


def model_name(model: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """The name the window is guessed from: ``model``, else the first of ANTHROPIC_MODEL / _DEFAULT_*_MODEL."""
    return model or next((n for n in (_lookup(v, env) for v in _MODEL_VARS) if n), "")


# -- self-calibration: the level at which a request overflowed, kept per endpoint and model -----------
def calibration_path(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CONFIG_HOME/flower/.windows`` (default ``~/.config/flower/.windows``), beside `flower setup`'s file."""
    base = _lookup("XDG_CONFIG_HOME", env) or str(Path(_lookup("HOME", env) or Path.home()) / ".config")
    return Path(base) / "flower" / CALIBRATION_FILE


def calibration_key(model: str | None = None, env: Mapping[str, str] | None = None) -> str:
    """``<base url>|<model>``: the window is the route's, so another gateway or model learns afresh."""
    return f"{_lookup('ANTHROPIC_BASE_URL', env) or 'default'}|{model_name(model, env)}"


def _calibrations(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _level(tokens: object) -> int | None:
    """A kept level as a positive number of tokens; anything else (a hand-edited file) counts as none."""
    return int(tokens) if isinstance(tokens, int | float) and not isinstance(tokens, bool) and tokens > 0 else None


def calibrated_window(model: str | None = None, env: Mapping[str, str] | None = None) -> int | None:
    """The context level this route last overflowed at (the smallest seen), or None."""
    return _level(_calibrations(calibration_path(env)).get(calibration_key(model, env)))


def remember_overflow(context: int, model: str | None = None, env: Mapping[str, str] | None = None) -> None:
    """Record that this route overflowed at ``context`` tokens; the smallest level seen is kept.

    Best effort: a file that cannot be written leaves the guess as it was (FLOWER_WINDOW and an
    explicit window win over a record anyway, so a stale one is overruled without deleting it).
    """
    if context <= 0:
        return
    path = calibration_path(env)
    data, key = _calibrations(path), calibration_key(model, env)
    known = _level(data.get(key))
    data[key] = min(known, int(context)) if known else int(context)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{CALIBRATION_FILE}.{os.getpid()}.tmp")  # whole file or nothing, for other readers
        tmp.write_text(json.dumps(data), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass


def default_window(model: str | None = None, env: Mapping[str, str] | None = None, *,
                   plain: int = LARGE_WINDOW, calibrated: bool = True) -> int:
    """The context window: ``FLOWER_WINDOW`` (see ``configured_window``), else what an overflow on this
    route taught (``calibrated_window``; skipped when ``calibrated=False``), else a guess from the name.

    The name is ``model_name(model, env)``. A standalone ``1m`` token means 1,000,000, a haiku model
    200,000, any other name (or none) ``plain``: 1,000,000 as in the original flower. Guessing too
    large is not fatal: the API answers "prompt is too long", the runtime hands off on the spot and
    records the level, so the next guess is right. (An explicit ``window=`` wins over all of this.)
    """
    if (configured := configured_window(env)) is not None:
        return configured
    if calibrated and (learned := calibrated_window(model, env)) is not None:
        return learned
    name = model_name(model, env)
    if _ONE_M.search(name):
        return LARGE_WINDOW
    return STANDARD_WINDOW if "haiku" in name.lower() else plain


@dataclass
class HandoffPolicy:
    """When to hand off: the original flower's fields and defaults, then ours.

    ``window=None`` means ``default_window`` at run time, from the step's model and the runtime's env.
    The handoff triggers at ``at = max(10_000, window - room)``; ``room`` is ``headroom`` when given
    (> 0), else a quarter of the window but at least 50,000 (the writing round runs above the line, so
    a fixed 50k is too little on a 1M window). The once-per-generation "near" notice comes at
    ``warn_at = max(1_000, at - 20_000)``. ``max_generations`` is a runaway brake: a window set below a
    role's startup context would otherwise hand off forever.

    Ours: ``trigger`` / ``near`` (fractions of the window, default None) replace those two lines;
    ``plain_window`` is the guess for a model name that says nothing about its window; ``calibrate``
    reads and records what overflows taught (see ``remember_overflow``). The bridge sets all four.
    """

    enabled: bool = True
    window: int | None = None
    headroom: int = 0
    max_generations: int = 8
    near: float | None = None
    trigger: float | None = None
    plain_window: int = LARGE_WINDOW
    calibrate: bool = True

    HEADROOM_FRACTION: ClassVar[float] = 0.25
    HEADROOM_FLOOR: ClassVar[int] = 50_000
    AT_FLOOR: ClassVar[int] = 10_000  # below this not even the handoff can be written
    WARN_BEFORE: ClassVar[int] = 20_000
    WARN_FLOOR: ClassVar[int] = 1_000

    def window_for(self, model: str | None = None, env: Mapping[str, str] | None = None) -> int:
        if self.window:
            return int(self.window)
        return default_window(model, env, plain=self.plain_window, calibrated=self.calibrate)

    def room_for(self, window: int) -> int:
        """The room left above the trigger for the writing round."""
        if self.headroom > 0:
            return self.headroom
        return max(self.HEADROOM_FLOOR, int(window * self.HEADROOM_FRACTION))

    def at_for(self, window: int) -> int:
        """The context level that triggers a handoff in a ``window``."""
        if self.trigger is not None:
            return max(1, int(window * self.trigger))
        return max(self.AT_FLOOR, window - self.room_for(window))

    def warn_at_for(self, window: int) -> int:
        """The level of the "near" notice (never above ``at_for``)."""
        at = self.at_for(window)
        warn = max(1, int(window * self.near)) if self.near is not None else max(self.WARN_FLOOR, at - self.WARN_BEFORE)
        return min(warn, at)

    # The original's properties, against ``window_for()`` (the process environment) when no window is set.
    @property
    def room(self) -> int:
        return self.room_for(self.window_for())

    @property
    def at(self) -> int:
        return self.at_for(self.window_for())

    @property
    def warn_at(self) -> int:
        return self.warn_at_for(self.window_for())

    def remember(self, context: int, model: str | None = None, env: Mapping[str, str] | None = None) -> None:
        """A request overflowed at ``context``: record it for the next guess (when ``calibrate``)."""
        if self.calibrate:
            remember_overflow(context, model, env)

    @classmethod
    def coerce(cls, value: HandoffPolicy | bool, *, window: int | None = None,
               max_generations: int | None = None) -> HandoffPolicy:
        """An instance as is (a copy when overrides apply: the caller's stays untouched); a bool becomes
        ``HandoffPolicy(enabled=value)``."""
        if isinstance(value, HandoffPolicy):
            if window is None and max_generations is None:
                return value
            policy = replace(value)
        else:
            policy = cls(enabled=bool(value))
        if window is not None:
            policy.window = int(window)
        if max_generations is not None:
            policy.max_generations = int(max_generations)
        return policy


_OVERFLOW = re.compile(
    r"prompt is too long|prompt_too_long|context[ _-]?length[ _-]?exceeded|maximum context length"
    r"|context window|too many total text bytes|input length and `?max_tokens`? exceed"
    r"|exceeds? (?:the )?context",
    re.I,
)


def is_overflow(*texts: str | None) -> bool:
    """True when any text says the request no longer fits the model's context."""
    return any(t and _OVERFLOW.search(t) for t in texts)


WRITE_PROMPT = """\
Stop the task here: your context is nearly full ({used:,} of about {window:,} tokens). A fresh \
session will take over from you and will know only what you write now. Do not call any tools; \
answer with the handoff document alone, in exactly these sections (markdown headings):

## Goal
What the task is for, in one or two sentences, with the human's own constraints.
## Done
What is finished and verified, with paths to the files and outputs that prove it.
## In progress
What you were doing at this very moment, precisely enough to resume it. (Required.)
## Decisions
What is settled and why, so it is not argued again.
## Dead ends
What you tried that did not work and why. This is the costliest thing to rediscover: write it.
## Next steps
The concrete next actions, in order. (Required.)
## Open questions
What is still unknown or waiting on the human.

Point to files instead of pasting their contents. Be brief and concrete."""

INTERRUPT_NOTE = (
    "(The human interrupted the run to say this. If a tool call that was in flight came back as "
    "interrupted or without a result, that is a normal side effect of the interruption, not an "
    "environment failure: redo it if it is still needed.)"
)
NEUTRAL_RESUME = "The human paused the run without a message. Continue where you left off."


def interrupt_prompt(words: str) -> str:
    """The prompt that resumes an interrupted session: the human's words (or a neutral line) plus the note."""
    words = words.strip()
    return f"{words}\n\n{INTERRUPT_NOTE}" if words else f"{NEUTRAL_RESUME}\n\n{INTERRUPT_NOTE}"


def human_addendum(prompt: str, words: str) -> str:
    """Attach words the human said between attempts to a prompt that is about to be sent anyway."""
    words = words.strip()
    return f"{prompt}\n\nThe human also said (mid-run): {words}" if words else prompt


DEGRADED_IN_A_ROW = 2  # as the original: a second assembled (unwritten) handoff in a row stops the step


def degraded_brake_message(in_a_row: int, at: int, window: int) -> str:
    return (f"handoff brake: {in_a_row} degraded handoffs in a row (no document could be written), and handing "
            "off again on an empty document only burns money. The threshold "
            f"({at:,} of a {window:,} window) leaves too little room for the writing round, or the window is "
            "smaller than guessed: set a smaller window= (or --window / FLOWER_WINDOW) or a larger headroom=.")


def brake_message(generations: int, at: int, window: int) -> str:
    return (f"handoff brake: {generations} handoffs in one step. The threshold ({at:,} of a {window:,} window) "
            "is probably below this role's startup context; raise window= (or --window), or turn handoff off.")


_UNSAFE = re.compile(r"[\\/:*?\"<>|\x00-\x1f]+")
# The seed's names (交接-<step>.md under notes/, older ones in notes/archive/交接/); a workbench carries its language's.
HANDOFF_PREFIX = catalogue()["note.handoff_prefix"]
HANDOFF_ARCHIVE = catalogue()["note.handoff_archive"]


def safe_name(step: str) -> str:
    """A step name usable as a file name (path separators and control characters removed)."""
    cleaned = _UNSAFE.sub("_", step).strip(" ._")
    return cleaned[:120] or "step"


def handoff_path(notes: Path, step: str, prefix: str = HANDOFF_PREFIX) -> Path:
    return notes / f"{prefix}{safe_name(step)}.md"


def write_handoff(notes: Path, step: str, markdown: str, *, prefix: str = HANDOFF_PREFIX,
                  archive_name: str = HANDOFF_ARCHIVE) -> Path:
    """Write the document to ``<notes>/<prefix><step>.md``; an older one moves to ``notes/archive/<archive_name>/``.
    The names default to the seed's (交接-, 交接); a workbench carries its language's (workbench.py)."""
    path = handoff_path(notes, step, prefix)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        archive = notes / "archive" / archive_name
        archive.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        target = archive / f"{safe_name(step)}-{stamp}.md"
        n = 1
        while target.exists():
            n += 1
            target = archive / f"{safe_name(step)}-{stamp}-{n}.md"
        path.replace(target)
    tmp = path.with_suffix(".md.tmp")
    tmp.write_text(markdown, encoding="utf-8")
    tmp.replace(path)
    return path
