"""Cut long text into platform-sized chunks without breaking code fences, and defuse mass pings.

`split_text` prefers, in order: paragraph boundaries, line boundaries, spaces, then any character,
taking a boundary only if it keeps the chunk at least half full. A chunk that ends inside a ```
fence is closed with the same marker and the next chunk reopens it with the same language, so
each chunk renders on its own. No chunk ever exceeds `limit` (fence repair is skipped only when a
pathological fence line would not leave room for content — limits of 60+ are always repaired).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

__all__ = ["Span", "neutralize_mentions", "split_spans", "split_text"]

_FENCE_RE = re.compile(r" {0,3}(`{3,})([^`]*)")  # an opening line; a bare marker also closes
_ZWSP = "\u200b"


@dataclass(frozen=True)
class _Fence:
    marker: str
    lang: str

    @property
    def reopen(self) -> str:
        return f"{self.marker}{self.lang}\n"

    @property
    def close(self) -> str:
        return f"\n{self.marker}"


@dataclass(frozen=True)
class _Line:
    start: int
    end: int  # exclusive, without the newline
    kind: str  # "text" | "open" | "close"
    before: _Fence | None
    after: _Fence | None


@dataclass(frozen=True)
class Span:
    """A chunk as `prefix + text[start:end] + suffix` (prefix reopens a fence, suffix closes one)."""

    start: int
    end: int
    prefix: str
    suffix: str


def _scan(text: str) -> list[_Line]:
    lines: list[_Line] = []
    fence: _Fence | None = None
    pos = 0
    while pos < len(text):
        nl = text.find("\n", pos)
        end = len(text) if nl < 0 else nl
        content = text[pos:end].rstrip("\r")
        m = _FENCE_RE.fullmatch(content)
        kind, before = "text", fence
        if fence is None and m:
            lang = m.group(2).strip().split(" ")[0][:16]
            kind, fence = "open", _Fence(m.group(1), lang)
        elif fence is not None and m and not m.group(2).strip() and len(m.group(1)) >= len(fence.marker):
            kind, fence = "close", None
        lines.append(_Line(pos, end, kind, before, fence))
        pos = end + 1
    return lines


class _Splitter:
    def __init__(self, text: str, limit: int) -> None:
        self.text, self.limit = text, limit
        self.lines = _scan(text)
        self.starts = [ln.start for ln in self.lines]

    def line_at(self, p: int) -> _Line:
        return self.lines[bisect.bisect_right(self.starts, p) - 1]

    def state(self, p: int) -> _Fence | None:
        if p >= len(self.text):
            return self.lines[-1].after if self.lines else None
        ln = self.line_at(p)
        return ln.before  # at a line start, or inside a text line (where before == after)

    def priority(self, p: int) -> int | None:
        """0 paragraph, 1 line, 2 space, 3 any character; None = never cut here."""
        t = self.text
        if p >= len(t):
            return 0
        ln = self.line_at(p)
        if p == ln.start:
            prev = self.line_at(p - 1)
            if ln.kind == "close":
                return 3  # don't start a chunk with a lone closing fence unless forced
            blank_before = prev.kind == "text" and not t[prev.start:prev.end].strip()
            if ln.kind == "open" or prev.kind == "close" or blank_before:
                return 0
            return 1
        if ln.kind != "text" or p > ln.end:
            return None
        # A half line that would read as a fence marker is no place to cut (cheap test first).
        if t[ln.start:ln.start + 6].lstrip(" ").startswith("```") and _FENCE_RE.fullmatch(t[ln.start:p]):
            return None
        if t[p:p + 6].lstrip(" ").startswith("```") and _FENCE_RE.fullmatch(t[p:ln.end].rstrip("\r")):
            return None
        return 2 if t[p - 1] in " \t" else 3

    def size(self, i: int, p: int, prefix: str) -> int:
        end_state = self.state(p)
        return len(prefix) + (p - i) + (len(end_state.close) if end_state else 0)

    def fits(self, i: int, p: int, prefix: str) -> bool:
        return self.size(i, p, prefix) <= self.limit

    def cut_after(self, i: int, prefix: str, repair: bool) -> int:
        """Where the chunk starting at i ends."""
        n = len(self.text)
        top = min(n, i + self.limit - len(prefix))
        maxfeas = next((p for p in range(top, i, -1) if not repair or self.fits(i, p, prefix)), i + 1)
        if maxfeas == n:
            return n
        half = i + (maxfeas - i) // 2
        # Line starts in the window, latest first: paragraph breaks, then line breaks.
        best: dict[int, int] = {}
        lo = bisect.bisect_right(self.starts, i)
        hi = bisect.bisect_right(self.starts, maxfeas)
        for k in range(hi - 1, lo - 1, -1):
            p = self.starts[k]
            if best and p < half:
                break
            pr = self.priority(p)
            if pr is not None and pr not in best and (not repair or self.fits(i, p, prefix)):
                best[pr] = p
        for pr in (0, 1):
            if pr in best and best[pr] >= half:
                return best[pr]
        # Then a space, then any allowed character.
        q = self.text.rfind(" ", half, maxfeas)
        while q >= half:
            if self.priority(q + 1) == 2 and (not repair or self.fits(i, q + 1, prefix)):
                return q + 1
            q = self.text.rfind(" ", half, q)
        for p in range(maxfeas, i, -1):
            if self.priority(p) is not None and (not repair or self.fits(i, p, prefix)):
                return p
        return maxfeas  # no allowed cut at all (a fence line longer than the limit): cut anyway

    def spans(self) -> list[Span]:
        out: list[Span] = []
        i, n = 0, len(self.text)
        while i < n:
            start_state = self.state(i)
            prefix = start_state.reopen if start_state else ""
            repair = len(prefix) + 1 + 32 <= self.limit  # room for content beside the fence lines
            if not repair:
                prefix = ""
            cut = self.cut_after(i, prefix, repair)
            end_state = self.state(cut) if repair else None
            out.append(Span(i, cut, prefix, end_state.close if end_state else ""))
            i = cut
        return out


def split_spans(text: str, limit: int) -> list[Span]:
    """The cut plan: spans tile `text` exactly, in order, each rendering within `limit`."""
    if limit < 1:
        raise ValueError(f"limit must be positive, got {limit}")
    return _Splitter(text, limit).spans()


def split_text(text: str, limit: int) -> list[str]:
    """Split into chunks of at most `limit` chars; blank chunks are dropped ("" gives [])."""
    chunks = []
    for s in split_spans(text, limit):
        body = text[s.start:s.end].strip("\n")
        if body.strip():
            chunks.append(s.prefix + body + s.suffix)
    return chunks


_AT_RE = re.compile(r"@(everyone|here|channel)\b", re.IGNORECASE)
_ANGLE_RE = re.compile(r"<(!(?:everyone|here|channel|subteam\^)|@&)", re.IGNORECASE)


def neutralize_mentions(text: str) -> str:
    """Defuse mass and role pings: @everyone/@here/@channel, Slack <!channel>/<!here>/<!everyone>/
    <!subteam^…>, Discord role mentions <@&id>. A zero-width space (U+200B) goes after the "@" or "<",
    so the text looks the same but no longer parses as a mention. Idempotent. Platforms should still
    restrict mentions natively (Discord allowed_mentions; Slack escaping of <, >, &)."""
    text = _AT_RE.sub(lambda m: f"@{_ZWSP}{m.group(1)}", text)
    return _ANGLE_RE.sub(lambda m: f"<{_ZWSP}{m.group(1)}", text)
