"""Markdown records of the channel: the Q&A log entry, the transcript, and append-only file writes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path

from .ask import Ask

_OUTCOME_LABEL = {
    "asked": "等待中",
    "answered": "已回答",
    "timeout": "无人应答",
    "declined": "拒答",
    "over_budget": "超出提问额度",
    "invalid": "提问无效",
    "cancelled": "已取消",
}

# One lock for all appends in this process: answers and mail can arrive from several threads, and
# two interleaved appends to the same file would tear each other's entries.
_write_lock = threading.Lock()


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def ask_entry(ask: Ask) -> str:
    """One question as a markdown section: question, options, outcome, answer, time."""
    lines = [f"### {ask.id} · {_OUTCOME_LABEL.get(ask.state, ask.state)} · {_stamp(ask.asked_at)}", "",
             f"**问:** {ask.question}"]
    if ask.options:
        lines.append("**选项:** " + " / ".join(ask.options))
    lines.append(f"**结果:** {ask.state}")
    if ask.answer:
        lines.append(f"**答:** {ask.answer}")
    if ask.facts.get("by"):  # who decided (an approval records it)
        lines.append(f"**决定人:** {ask.facts['by']}")
    lines.append(f"**等待:** {ask.waited_s} s")
    return "\n".join(lines) + "\n"


def transcript(asks: Iterable[Ask]) -> str:
    entries = [ask_entry(a) for a in asks]
    if not entries:
        return "# 问答记录\n\n(还没有提问)\n"
    return "# 问答记录\n\n" + "\n".join(entries)


def amend_entry(text: str, label: str, at: float) -> str:
    return f"\n\n## {label}({_stamp(at)})\n\n{text}\n"


def append(path: Path, text: str) -> None:
    """Append text to path, creating parent directories. Never truncates what is already there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with _write_lock, path.open("a", encoding="utf-8") as fh:
        fh.write(text)
