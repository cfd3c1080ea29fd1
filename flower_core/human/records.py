"""Markdown records of the channel: the Q&A log entry, the transcript, and append-only file writes.

The labels are in the channel's language (``flower_core/lang/``): the Q&A log is a note the model reads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path

from flower_core.lang import Catalogue, catalogue

from .ask import Ask

# One lock for all appends in this process: answers and mail can arrive from several threads, and
# two interleaved appends to the same file would tear each other's entries.
_write_lock = threading.Lock()


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def ask_entry(ask: Ask, lang: Catalogue | None = None) -> str:
    """One question as a markdown section: question, options, outcome, answer, time (labels in ``lang``,
    the seed's by default)."""
    said = catalogue(lang)
    label = said.texts.get(f"qa.state.{ask.state}", str(ask.state))
    lines = [f"### {ask.id} · {label} · {_stamp(ask.asked_at)}", "", f"{said['qa.question']}{ask.question}"]
    if ask.options:
        lines.append(said["qa.options"] + " / ".join(ask.options))
    lines.append(f"{said['qa.outcome']}{ask.state}")
    if ask.answer:
        lines.append(f"{said['qa.answer']}{ask.answer}")
    if ask.facts.get("by"):  # who decided (an approval records it)
        lines.append(f"{said['qa.by']}{ask.facts['by']}")
    lines.append(f"{said['qa.waited']}{ask.waited_s} s")
    return "\n".join(lines) + "\n"


def transcript(asks: Iterable[Ask], lang: Catalogue | None = None) -> str:
    said = catalogue(lang)
    entries = [ask_entry(a, said) for a in asks]
    if not entries:
        return f"# {said['qa.title']}\n\n{said['qa.none']}\n"
    return f"# {said['qa.title']}\n\n" + "\n".join(entries)


def amend_entry(text: str, label: str, at: float) -> str:
    return f"\n\n## {label}({_stamp(at)})\n\n{text}\n"


def append(path: Path, text: str) -> None:
    """Append text to path, creating parent directories. Never truncates what is already there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _write_lock, path.open("a", encoding="utf-8") as fh:
        fh.write(text)
