"""Handoff policy: when a session's context is nearly full, it writes a handoff document and a
fresh session takes over (instead of the CLI's auto-compact summarising history behind our back).

This module holds the pure parts: the window guess, the thresholds, the overflow signal, the
prompts, and where the document lands on disk. The document itself is ``document.HandoffDoc``.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

STANDARD_WINDOW = 200_000
LARGE_WINDOW = 1_000_000
# "claude-x[1m]", "claude-x-1m", "1M": a standalone 1m token marks the long-context variant.
_ONE_M = re.compile(r"(?:^|[^a-z0-9])1m(?:[^a-z0-9]|$)", re.I)
_MODEL_VARS = ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL")


WINDOW_VAR = "FLOWER_WINDOW"


def configured_window(env: Mapping[str, str] | None = None) -> int | None:
    """``FLOWER_WINDOW`` from ``env``, then ``os.environ``: a positive integer of tokens, else None.

    The window belongs to the gateway (like its URL), so it can be set once in the environment;
    a value that is not a positive integer counts as unset rather than shrinking the window to nothing.
    """
    for source in (env or {}, os.environ):
        raw = (source.get(WINDOW_VAR) or "").strip()
        if raw:
            try:
                tokens = int(raw)
            except ValueError:
                return None
            return tokens if tokens > 0 else None
    return None


def default_window(model: str | None = None, env: Mapping[str, str] | None = None) -> int:
    """The context window: ``FLOWER_WINDOW`` when set (see ``configured_window``), else a guess from the model name.

    The name is ``model`` when given, else the first of ANTHROPIC_MODEL / ANTHROPIC_DEFAULT_*_MODEL
    found in ``env`` (then ``os.environ``). A standalone ``1m`` token means 1,000,000; everything
    else, including no name at all, is 200,000: current Claude models' standard window. Guessing
    too small only hands off early; guessing too large is caught by the overflow signal.
    """
    if (configured := configured_window(env)) is not None:
        return configured
    names = [model] if model else []
    for source in (env or {}, os.environ):
        names.extend(source.get(var, "") for var in _MODEL_VARS)
    name = next((n for n in names if n), "")
    return LARGE_WINDOW if _ONE_M.search(name) else STANDARD_WINDOW


@dataclass
class HandoffPolicy:
    """When to hand off. ``window=None`` means ``default_window(spec.model)`` at run time.

    ``near`` and ``trigger`` are fractions of the window: at ``near`` an approaching notice is
    emitted once per generation, at ``trigger`` the session writes its handoff. The room above
    ``trigger`` is for the writing round itself. ``max_generations`` is a runaway brake: a window
    set below a role's startup context would otherwise hand off forever.
    """

    enabled: bool = True
    window: int | None = None
    near: float = 0.70
    trigger: float = 0.80
    max_generations: int = 5

    def window_for(self, model: str | None = None, env: Mapping[str, str] | None = None) -> int:
        return self.window if self.window else default_window(model, env)

    def at(self, window: int) -> int:
        """The context level that triggers a handoff."""
        return max(1, int(window * self.trigger))

    def warn_at(self, window: int) -> int:
        """The context level of the once-per-generation "near" notice (never above ``at``)."""
        return max(1, min(int(window * self.near), self.at(window)))

    @classmethod
    def coerce(cls, value: HandoffPolicy | bool, *, window: int | None = None,
               max_generations: int | None = None) -> HandoffPolicy:
        """An instance as is (with overrides applied); a bool becomes ``HandoffPolicy(enabled=value)``."""
        policy = value if isinstance(value, HandoffPolicy) else cls(enabled=bool(value))
        if window is not None:
            policy.window = int(window)
        if max_generations is not None:
            policy.max_generations = int(max_generations)
        return policy


_OVERFLOW = re.compile(
    r"prompt is too long|prompt_too_long|context length exceeded|maximum context length"
    r"|context window|too many total text bytes|input length and max_tokens exceed|exceeds? the context",
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


def brake_message(generations: int, at: int, window: int) -> str:
    return (f"handoff brake: {generations} handoffs in one step. The threshold ({at:,} of a {window:,} window) "
            "is probably below this role's startup context; raise window= (or --window), or turn handoff off.")


_UNSAFE = re.compile(r"[\\/:*?\"<>|\x00-\x1f]+")
HANDOFF_PREFIX = "交接-"


def safe_name(step: str) -> str:
    """A step name usable as a file name (path separators and control characters removed)."""
    cleaned = _UNSAFE.sub("_", step).strip(" ._")
    return cleaned[:120] or "step"


def handoff_path(notes: Path, step: str) -> Path:
    return notes / f"{HANDOFF_PREFIX}{safe_name(step)}.md"


def write_handoff(notes: Path, step: str, markdown: str) -> Path:
    """Write the document to ``<notes>/交接-<step>.md``; an older one moves to ``notes/archive/交接/``."""
    path = handoff_path(notes, step)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        archive = notes / "archive" / "交接"
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
