"""HandoffDoc: the document a session writes for its successor, parsed from its reply.

Seven sections; only "in progress" and "next steps" are required, because demanding the others
(dead ends, say) at the start of a task would force the writer to invent them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# (field, heading written, extra aliases accepted when parsing: English and Chinese)
SECTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("goal", "Goal", ("objective", "目标")),
    ("done", "Done", ("completed", "finished", "已完成", "已做")),
    ("doing", "In progress", ("doing", "current state", "现在在做", "进行中")),
    ("decided", "Decisions", ("decided", "decisions made", "已定的事", "决定")),
    ("deadends", "Dead ends", ("dead end", "what did not work", "what didn't work", "走不通的", "走不通的路")),
    ("next", "Next steps", ("next", "next step", "下一步")),
    ("open", "Open questions", ("unknowns", "待定", "未决问题")),
)
REQUIRED = ("doing", "next")
DEGRADED_MARK = "[degraded: the handoff document was not written]"
TASK_EXCERPT = 1200
EMPTY = "(empty)"

_ALIASES: list[tuple[str, str]] = sorted(
    ((alias.lower(), name) for name, heading, extra in SECTIONS for alias in (heading, name, *extra)),
    key=lambda pair: -len(pair[0]),
)
_PREFIX = re.compile(r"^\s{0,3}(?:#{1,6}\s*)?(?:[-*]\s+)?(?:\d+[.)]\s*)?")
_TITLE = re.compile(r"^(?P<title>[^:：\n]{1,40}?)\s*(?:[:：]\s*(?P<rest>.*))?$")
_FENCE = re.compile(r"^\s*(```|~~~)", re.M)


def _section_of(line: str) -> tuple[str, str] | None:
    """(field, text after the heading) when ``line`` is a section heading, else None.

    Accepts "## Done", "**Done**", "Done:", "**Done:** text", "3. Done" and the Chinese names; the
    title must equal a known name exactly, so ordinary prose is never taken for a heading.
    """
    bare = _PREFIX.sub("", line.replace("**", "").replace("__", "")).strip()
    m = _TITLE.match(bare)
    if not m:
        return None
    title = m.group("title").strip().lower()
    for alias, name in _ALIASES:
        if title == alias:
            return name, (m.group("rest") or "").strip()
    return None


@dataclass
class HandoffDoc:
    """A parsed handoff document. ``degraded`` marks one assembled by the runtime, not written."""

    goal: str = ""
    done: str = ""
    doing: str = ""
    decided: str = ""
    deadends: str = ""
    next: str = ""
    open: str = ""
    step: str = ""
    degraded: bool = False
    why: str = ""
    task: str = field(default="", repr=False)

    @classmethod
    def parse(cls, text: str, *, step: str = "") -> HandoffDoc:
        """Read the sections out of a reply; the first non-empty occurrence of a section wins.

        Headings inside code fences are ignored, unless that leaves the document incomplete (a
        writer that wraps its whole answer in a fence still gets its sections read).
        """
        doc = cls._parse(text, step, fences=True)
        if not doc.complete() and _FENCE.search(text or ""):
            loose = cls._parse(text, step, fences=False)
            if loose.complete():
                return loose
        return doc

    @classmethod
    def _parse(cls, text: str, step: str, *, fences: bool) -> HandoffDoc:
        blocks: list[tuple[str, list[str]]] = []
        in_fence = False
        for line in (text or "").splitlines():
            if _FENCE.match(line):
                in_fence = fences and not in_fence
                if blocks and fences:
                    blocks[-1][1].append(line)
                continue
            hit = None if in_fence else _section_of(line)
            if hit is not None:
                blocks.append((hit[0], [hit[1]] if hit[1] else []))
            elif blocks:
                blocks[-1][1].append(line)
        doc = cls(step=step)
        for name, lines in blocks:
            body = "\n".join(lines).strip()
            if body and not getattr(doc, name):
                setattr(doc, name, body)
        return doc

    def missing(self) -> list[str]:
        return [name for name in REQUIRED if not getattr(self, name).strip()]

    def complete(self) -> bool:
        return not self.missing()

    def sections(self) -> list[str]:
        """Names of the sections that have content."""
        return [name for name, _, _ in SECTIONS if getattr(self, name).strip()]

    def to_markdown(self, *, meta: str = "") -> str:
        """The document for humans: every section, empty ones marked, with an optional metadata line."""
        title = f"# Handoff — {self.step}" if self.step else "# Handoff"
        lines = [title]
        if meta:
            lines.append(f"> {meta}")
        if self.degraded:
            lines.append(f"> {DEGRADED_MARK}" + (f" ({self.why})" if self.why else ""))
        for name, heading, _ in SECTIONS:
            lines += ["", f"## {heading}", getattr(self, name).strip() or EMPTY]
        return "\n".join(lines) + "\n"

    def prompt_block(self) -> str:
        """The successor's first prompt: who it is, the non-empty sections, and the original task."""
        head = ("You are taking over this task from a previous session whose context filled up. "
                "The handoff document below is what it left you; the files in the workspace are the "
                "ground truth. Continue from the next steps; do not start over, and do not ask the human "
                "for background that is already here.")
        if self.degraded:
            head += (" This document is incomplete (the previous session could not write it): "
                     "look at the workspace to see where the work stands before acting.")
        lines = [head, "", f"# Handoff — {self.step}" if self.step else "# Handoff"]
        for name, heading, _ in SECTIONS:
            body = getattr(self, name).strip()
            if body:
                lines += ["", f"## {heading}", body]
        if self.task.strip() and self.task.strip() not in self.goal:
            lines += ["", "## Original task (verbatim)", _clip(self.task.strip(), 4000)]
        return "\n".join(lines)


def degraded(step: str, task: str, *, last_text: str = "", tool_calls: Iterable[str] = (),
             why: str = "") -> HandoffDoc:
    """A partial document assembled from what the runtime saw, for when the session cannot write one.

    A partial handoff beats running into the context wall.
    """
    calls = [c for c in tool_calls if c]
    done = ""
    if calls:
        done = "Recent tool calls, oldest first:\n" + "\n".join(f"- {_clip(c, 200)}" for c in calls)
    doing = DEGRADED_MARK
    if last_text.strip():
        doing += "\nThe last thing the previous session said:\n" + _clip(last_text.strip(), 1500)
    return HandoffDoc(
        goal=_clip(task.strip(), TASK_EXCERPT), done=done, doing=doing,
        next="Inspect the workspace to see how far the work got, then continue toward the goal.",
        step=step, degraded=True, why=why, task=task,
    )


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
