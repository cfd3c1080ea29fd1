"""The original flower's structured documents: a Brief, a Goal and a three-outcome Verdict.

    model reply ──parse()──> Brief / Goal / Verdict ──write()──> notes/*.md ──load()──> (next process)
                                   │
                                   └─ prompt_block() ──> the next step's prompt (non-empty sections only)

Each one parses a block of model output leniently (the heading parser of ``documents``: ``## 目标``,
``**Goal**``, ``目标:``, ``1. 边界``; fenced code dropped first, an unclosed fence drops the rest),
reports what is ``missing()`` by its Chinese section names (ready to show a person), and spills to
disk and back. A Verdict has three outcomes, not two: ``achieved``, ``not_yet`` and ``unreachable``
(the goal cannot be reached or checked here, which is a question for a person, not another round).
``ok`` is False when no conclusion could be read; that always counts as not achieved.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from flower_core.documents import BRIEF_SECTIONS, GOAL_SECTIONS, sections, strip_fences

UNFILLED = "(未填)"
EMPTY = "(空)"
UNVERIFIABLE_MARK = "[此环境无法验证"
AMENDED = "(已修改)"

# field -> the Chinese section name shown to people and written as the heading.
BRIEF_TITLES = {"goal": "目标", "accept": "验收标准", "bounds": "边界", "unknowns": "未知与假设"}
GOAL_TITLES = {"statement": "目标", "checks": "判定清单"}
VERDICT_SECTIONS: dict[str, tuple[str, ...]] = {
    "state": ("结论", "判定", "verdict", "conclusion"),
    "reason": ("理由", "原因", "reason", "reasons", "why"),
    "failed": ("未通过", "未通过项", "没通过", "not passed", "failed", "failing"),
}

# A Verdict's three states (the original flower's names for them).
ACHIEVED, NOT_YET, UNREACHABLE = "achieved", "not_yet", "unreachable"

# Longest first, so "未达成" is not read as "达成" and "not achieved" not as "achieved".
_STATE_WORDS: list[tuple[str, str]] = sorted([
    *[(w, "unreachable") for w in ("无法达成", "达不到", "不可达", "unreachable", "无法验证", "没法验证", "验证不了",
                                   "无法判定", "unverifiable", "cannot be verified")],
    *[(w, "not_yet") for w in ("未达成", "没达成", "尚未达成", "未完成", "未通过", "没通过", "not yet", "not_yet",
                               "not achieved", "not pass", "fail")],
    *[(w, "achieved") for w in ("达成", "已达成", "通过", "achieved", "pass")],
], key=lambda pair: len(pair[0]), reverse=True)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")


def _items(body: str) -> list[str]:
    """One entry per non-empty line, list markers (``-``, ``*``, ``1.``) stripped."""
    return [_BULLET.sub("", line).strip() for line in body.splitlines() if _BULLET.sub("", line).strip()]


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError:
        return None


def _write(path: str | Path, text: str) -> Path:
    target = Path(path).expanduser().resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return target


def _stamp() -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S")


@dataclass
class Brief:
    """The four-section brief: goal, acceptance criteria, boundaries, unknowns and assumptions."""

    goal: str = ""
    accept: str = ""
    bounds: str = ""
    unknowns: str = ""
    path: Path | None = field(default=None, compare=False)

    def missing(self) -> list[str]:
        return [title for key, title in BRIEF_TITLES.items() if not getattr(self, key).strip()]

    def complete(self) -> bool:
        return not self.missing()

    @classmethod
    def parse(cls, text: str) -> Brief:
        found = sections(text, BRIEF_SECTIONS)
        return cls(goal=found.get("goal", ""), accept=found.get("accept", ""), bounds=found.get("bounds", ""),
                   unknowns=found.get("unknowns", ""))

    def to_markdown(self) -> str:
        body = "\n\n".join(f"## {title}\n{getattr(self, key).strip() or UNFILLED}"
                           for key, title in BRIEF_TITLES.items())
        return f"# 需求确认书\n\n> 冻结于 {_stamp()}\n\n{body}\n"

    def prompt_block(self) -> str:
        return "\n\n".join(f"## {title}\n{getattr(self, key).strip()}"
                           for key, title in BRIEF_TITLES.items() if getattr(self, key).strip())

    def write(self, path: str | Path) -> Path:
        self.path = _write(path, self.to_markdown())
        return self.path

    @classmethod
    def load(cls, path: str | Path) -> Brief | None:
        text = _read(path)
        if text is None:
            return None
        brief = cls.parse(text)
        for key in BRIEF_TITLES:  # the placeholder written for an empty section reads back as empty
            if getattr(brief, key).strip() == UNFILLED:
                setattr(brief, key, "")
        brief.path = Path(path).expanduser().resolve()
        return brief


@dataclass
class Goal:
    """The goal a judge checks each round against: a statement and a checklist, one check per line."""

    statement: str = ""
    checks: list[str] = field(default_factory=list)
    path: Path | None = None

    @property
    def unverifiable(self) -> list[str]:
        """Checks marked as impossible to verify here: they cannot pass, whatever the work does."""
        return [c for c in self.checks if UNVERIFIABLE_MARK in c]

    def missing(self) -> list[str]:
        out = []
        if not self.statement.strip():
            out.append(GOAL_TITLES["statement"])
        if not self.checks:
            out.append(GOAL_TITLES["checks"])
        return out

    def complete(self) -> bool:
        return not self.missing()

    @classmethod
    def parse(cls, text: str) -> Goal:
        found = sections(text, GOAL_SECTIONS)
        checks = [c for c in _items(found.get("checks", "")) if c != EMPTY]
        return cls(statement=found.get("statement", ""), checks=checks)

    def to_markdown(self) -> str:
        checks = "\n".join(f"- {c}" for c in self.checks) or EMPTY
        return f"# 目标\n\n> 冻结于 {_stamp()}\n\n## 目标\n{self.statement.strip() or EMPTY}\n\n## 判定清单\n{checks}\n"

    def prompt_block(self) -> str:
        checks = "\n".join(f"- {c}" for c in self.checks)
        return f"## 目标\n{self.statement.strip()}\n\n## 判定清单\n{checks}".strip()

    def write(self, path: str | Path) -> Path:
        self.path = _write(path, self.to_markdown())
        return self.path

    @classmethod
    def load(cls, path: str | Path) -> Goal | None:
        text = _read(path)
        if text is None:
            return None
        goal = cls.parse(text)
        if goal.statement.strip() == EMPTY:
            goal.statement = ""
        goal.path = Path(path).expanduser().resolve()
        return goal

    def amend(self, extra: str) -> Goal:
        """Append (never overwrite) a change to the statement; the original stays readable."""
        if extra.strip():
            self.statement = f"{self.statement.rstrip()}\n\n{AMENDED}{extra.strip()}"
        return self


@dataclass
class Verdict:
    """One judge round with three outcomes: ``achieved``, ``not_yet``, ``unreachable`` ("" = unreadable)."""

    state: str = ""
    reason: str = ""
    failed: list[str] = field(default_factory=list)

    @property
    def achieved(self) -> bool:
        return self.state == "achieved"

    @property
    def unreachable(self) -> bool:
        return self.state == "unreachable"

    @property
    def ok(self) -> bool:
        """Whether a conclusion was read at all; False must be taken as not achieved."""
        return bool(self.state)

    @classmethod
    def parse(cls, text: str) -> Verdict:
        found = sections(text, VERDICT_SECTIONS)
        failed = [c for c in _items(found.get("failed", "")) if c not in (EMPTY, "无", "none")]
        head = found.get("state", "")
        state = _state_of(head) if head else _bare_state(strip_fences(text))
        return cls(state=state, reason=found.get("reason", ""), failed=failed)

    def feedback(self) -> str:
        """What goes back to the worker: what is still missing, never how to do it."""
        why = f"Why: {self.reason.strip()}\n" if self.reason.strip() else ""
        listed = "\n".join(f"- {item}" for item in self.failed) or (
            "- (the judge listed nothing; read the goal's checklist again)" if not why else "")
        missing = f"Still missing:\n{listed}\n" if listed else ""
        return ("An independent judge checked this round against the goal: not achieved yet.\n"
                f"{why}{missing}Continue from where you are and close these gaps, then report again.")


def _state_of(text: str) -> str:
    low = text.lower()
    hits = [(low.find(word), -len(word), state) for word, state in _STATE_WORDS if word in low]
    if hits:
        return min(hits)[2]  # the earliest word, the longest at that spot
    if re.search(r"\b1\b", low):
        return "achieved"
    if re.search(r"\b0\b", low):
        return "not_yet"
    return ""


def _bare_state(text: str) -> str:
    """A reply with no conclusion heading: a bare 1/true or 0/false, else the same word search."""
    bare = text.strip().lower()
    if re.fullmatch(r"1|true", bare):
        return "achieved"
    if re.fullmatch(r"0|false", bare):
        return "not_yet"
    return _state_of(bare)
