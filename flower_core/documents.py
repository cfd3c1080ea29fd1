"""The frozen documents of a starter run, read leniently: the brief, the goal, a judge's verdict.

Models format headings many ways (``## Goal``, ``**目标**``, ``Goal:``, ``1. Goal``); these parsers
accept all of them, English or Chinese. Fenced code is dropped first (an unclosed fence drops the
rest): pasted code must never count as a section.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# section key -> accepted heading names (longest first when matching, so "unknowns" keeps its tail).
BRIEF_SECTIONS: dict[str, tuple[str, ...]] = {
    "goal": ("goal", "目标"),
    "accept": ("acceptance criteria", "acceptance", "验收标准", "验收条件"),
    "bounds": ("boundaries", "boundary", "out of scope", "边界", "不做什么"),
    "unknowns": ("unknowns and assumptions", "unknowns & assumptions", "unknowns", "assumptions",
                 "未知与假设", "未知项与假设"),
}
GOAL_SECTIONS: dict[str, tuple[str, ...]] = {
    "statement": ("goal", "目标"),
    "checks": ("checklist", "checks", "check list", "判定清单", "验收清单"),
}
VERDICT_SECTIONS: dict[str, tuple[str, ...]] = {"verdict": ("verdict", "结论", "判定")}

_FENCE = re.compile(r"^\s*(```|~~~)")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+(.*\S)")
_PASS = re.compile(r"\b(pass(?:ed)?|achieved|done)\b|通过|达成", re.I)
_FAIL = re.compile(r"\b(fail(?:ed)?|not\s+(?:yet|achieved|done)|incomplete)\b|未通过|不通过|未达成", re.I)


def strip_fences(text: str) -> str:
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        if _FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            out.append(line)
    return "\n".join(out)  # an unclosed fence has swallowed everything after it, on purpose


def _heading(line: str, names: dict[str, str]) -> tuple[str, str] | None:
    """(section key, text after the heading) when ``line`` is a heading of a known section."""
    s = re.sub(r"^\s*(?:#{1,6}\s*|\d+[.)]\s*)?", "", line).strip()
    s = s.strip("*_ ").strip()
    low = s.lower()
    for name in sorted(names, key=len, reverse=True):
        if low.startswith(name):
            rest = s[len(name):].strip("*_ ")
            if not rest or rest[0] in "(（":  # "## Goal", "目标 (Goal)"
                return names[name], ""
            m = re.match(r"^[*_ ]*(?:[:：]|\s[-—]\s)[\s*_]*(.*)$", s[len(name):])  # "Goal: text", "Goal - text"
            return (names[name], m.group(1).strip()) if m else None
    return None


def sections(text: str, spec: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """Split text into the known sections; the first non-empty occurrence of a section wins."""
    names = {alias: key for key, aliases in spec.items() for alias in aliases}
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in strip_fences(text).splitlines():
        hit = _heading(line, names) if len(line) < 120 else None
        if hit is not None:
            current = hit[0] if not "".join(found.get(hit[0], [])).strip() else None
            if current is not None:
                found[current] = [hit[1]] if hit[1] else []
            continue
        if current is not None:
            found[current].append(line)
    return {k: "\n".join(v).strip() for k, v in found.items() if "\n".join(v).strip()}


def brief_missing(text: str) -> list[str]:
    """Names of the brief sections that are absent or empty (empty list = complete)."""
    got = sections(text, BRIEF_SECTIONS)
    return [BRIEF_SECTIONS[k][0] for k in BRIEF_SECTIONS if k not in got]


def goal_checks(text: str) -> list[str]:
    """The checklist items of a goal document (bullets under the checklist heading)."""
    body = sections(text, GOAL_SECTIONS).get("checks", "")
    return [m.group(1) for line in body.splitlines() if (m := _BULLET.match(line))]


def goal_complete(text: str) -> bool:
    return bool(sections(text, GOAL_SECTIONS).get("statement")) and bool(goal_checks(text))


@dataclass
class Verdict:
    """One judge round: passed or not, and why. Anything ambiguous counts as not passed."""

    passed: bool = False
    reasons: list[str] = field(default_factory=list)
    clear: bool = False  # False when no verdict could be read at all

    @classmethod
    def parse(cls, text: str) -> Verdict:
        body = strip_fences(text)
        head = sections(body, VERDICT_SECTIONS).get("verdict", "")
        first = head.splitlines()[0] if head else ""
        reasons = [m.group(1) for line in body.splitlines() if (m := _BULLET.match(line))]
        for probe in (first, head):
            fail, ok = _FAIL.search(probe), _PASS.search(probe)
            if fail and (not ok or fail.start() <= ok.start()):  # "not achieved" starts before "achieved"
                return cls(False, reasons, True)
            if ok:
                return cls(True, reasons, True)
        return cls(False, reasons or ["the judge gave no clear verdict; counted as not passed"], False)

    def feedback(self) -> str:
        """What goes back to the worker: what is missing, not how to fix it."""
        items = "\n".join(f"- {r}" for r in self.reasons) or "- (no reasons given)"
        return ("An independent judge checked this round against the goal: not done yet.\n"
                f"{items}\nContinue from where you are and close these gaps; then report again.")
