"""Did an accepted input reach a model turn *as that turn's input*? Pure functions over what the double received.

An input can sit in the kept history and yet no model turn ever had it as news: its tool result was
stored, the process died before the model's next request (or while the reply was on its way), and
after the restart the conversation went on from a placeholder and a generic restart prompt. Counting
tokens in the history alone cannot tell that apart from an input the model acted on; this can.

- A request's *new input* is what it added: the user messages after its last assistant message (tool
  results and user text; the task prompt for a session's first request).
- A request is a *turn* when the conversation went on from it: its reply, as the double served it, is
  an assistant message of a kept session's last request (a reply with tool calls is known by their
  ids, which are fresh per reply; a reply of text alone by its text and its place), or it is itself a
  kept session's last request. A request whose reply was lost with a killed process is not a turn, nor
  is one the CLI answered with its own "No response requested." stand-in.
- Each input is then **as input once** (the new input of exactly one turn, in at most one input of the
  kept history), **only in history** (in the kept history, never a turn's new input), **twice** (the new
  input of two or more turns, or in two or more inputs of the kept history), or **lost** (nowhere).
- The kept history is counted by *inputs* (the user messages between two assistant messages), not by
  occurrences: a restatement beside the input in the same turn (the restart hand-over's note, "your
  question … got this reply: …", next to the tool result it repeats) is still one time. The history
  count of tally.py (issue 18's columns) counts occurrences and calls that duplicated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from flower_core.devmodel import RecordedRequest

ONCE, HISTORY, TWICE, LOST = "as input once", "only in history", "twice", "lost"
TAIL = 4  # messages shown of each request when a class is explained


def session_id(rec: RecordedRequest) -> str:
    meta = rec.body.get("metadata")
    raw = meta.get("user_id") if isinstance(meta, dict) else None
    try:
        found = json.loads(raw).get("session_id") if isinstance(raw, str) else None
    except (ValueError, AttributeError):
        found = None
    return str(found or "")


def _messages(rec: RecordedRequest) -> list[dict[str, Any]]:
    msgs = rec.body.get("messages")
    return [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _said(content: Any) -> list[str]:
    """What a user message carried: its text and its tool results' text (never what the model said)."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for block in _blocks(content):
        if block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            out.extend(_said(block.get("content")))
    return out


def _user_side(messages: Iterable[dict[str, Any]]) -> str:
    return "\n".join(part for m in messages if m.get("role") == "user" for part in _said(m.get("content")))


def tool_ids(rec: RecordedRequest) -> frozenset[str]:
    return frozenset(str(b.get("id")) for m in _messages(rec) if m.get("role") == "assistant"
                     for b in _blocks(m.get("content")) if b.get("type") == "tool_use")


def user_side(rec: RecordedRequest) -> str:
    """Everything the human side of the conversation carried: user text and tool results."""
    return _user_side(_messages(rec))


def segments(rec: RecordedRequest) -> list[str]:
    """The user side of each run of messages between two assistant messages (the inputs of its turns)."""
    out: list[list[dict[str, Any]]] = [[]]
    for msg in _messages(rec):
        if msg.get("role") == "assistant":
            out.append([])
        else:
            out[-1].append(msg)
    return [_user_side(group) for group in out if group]


def new_input(rec: RecordedRequest) -> str:
    """The user side of what this request added after the model's last word."""
    msgs = _messages(rec)
    last = max((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), default=-1)
    return _user_side(msgs[last + 1:])


def kept_sessions(requests: Sequence[RecordedRequest]) -> list[RecordedRequest]:
    """The last request of each session not carried whole (every tool call of it) into a later one."""
    last: dict[str, RecordedRequest] = {}
    for rec in requests:  # in arrival order: the last one of each session wins
        last[session_id(rec)] = rec
    ids = {sid: tool_ids(rec) for sid, rec in last.items()}
    return [rec for sid, rec in last.items()
            if not any(o is not rec and o.received_at > rec.received_at and ids[sid] <= ids[osid]
                       for osid, o in last.items())]


def _text(content: Any) -> str:
    """The text an assistant message said (its tool calls left out)."""
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text", "")) for b in _blocks(content) if b.get("type") == "text")


def _answered(reply: dict[str, Any], before: int, requests: Sequence[RecordedRequest],
              by_tool: dict[str, RecordedRequest], at: float) -> RecordedRequest | None:
    """The request whose served reply this kept assistant message is (`before`: assistant messages ahead of it)."""
    used = [str(b.get("id")) for b in _blocks(reply.get("content")) if b.get("type") == "tool_use"]
    if used:
        return by_tool.get(used[0])
    text = _text(reply.get("content")).strip()
    if not text:
        return None
    # A reply of text alone: the latest request at that place that was served that text. Two such
    # requests with the same history are one attempt repeated; only one of them went on.
    fits = [r for r in requests if not r.reply_tool_ids and r.reply_text.strip() == text and r.received_at < at
            and sum(1 for m in _messages(r) if m.get("role") == "assistant") == before]
    return max(fits, key=lambda r: r.received_at, default=None)


def turns(requests: Sequence[RecordedRequest]) -> list[RecordedRequest]:
    """The requests of one run the conversation went on from, in arrival order."""
    by_tool = {tid: r for r in requests for tid in r.reply_tool_ids}
    found: dict[int, RecordedRequest] = {}
    for last in kept_sessions(requests):
        found[id(last)] = last
        assistants = 0
        for msg in _messages(last):
            if msg.get("role") != "assistant":
                continue
            origin = _answered(msg, assistants, requests, by_tool, last.received_at)
            if origin is not None:
                found[id(origin)] = origin
            assistants += 1
    return sorted(found.values(), key=lambda r: r.received_at)


@dataclass(frozen=True)
class Reach:
    """Where one token went in one run's conversation."""

    as_input: int  # turns whose new input carries it
    in_history: int  # inputs (user messages between two assistant messages) of the kept history that carry it
    sent: int  # requests that carried it anywhere (kept or not), for the explanation

    @property
    def kind(self) -> str:
        if self.as_input > 1 or self.in_history > 1:
            return TWICE
        if self.as_input == 1:
            return ONCE
        return HISTORY if self.in_history else LOST


@dataclass(frozen=True)
class RunView:
    """One run's requests read once: its kept history (whole, and input by input), its turns and their new input."""

    requests: tuple[RecordedRequest, ...]
    kept: tuple[RecordedRequest, ...]
    turns: tuple[RecordedRequest, ...]
    history: str
    inputs: tuple[str, ...]
    segments: tuple[str, ...]  # the kept history's inputs: user side between two assistant messages

    @classmethod
    def of(cls, requests: Iterable[RecordedRequest]) -> RunView:
        recs = tuple(sorted(requests, key=lambda r: r.received_at))
        kept = tuple(kept_sessions(recs))
        counted = tuple(turns(recs))
        return cls(recs, kept, counted, "\n".join(user_side(r) for r in kept),
                   tuple(new_input(r) for r in counted), tuple(seg for r in kept for seg in segments(r)))

    def reach(self, token: str) -> Reach:
        return Reach(sum(1 for text in self.inputs if token in text), sum(1 for seg in self.segments if token in seg),
                     sum(1 for r in self.requests if token in user_side(r)))

    def explain(self, token: str, marks: Sequence[tuple[float, str]] = (), limit: int = 8) -> list[str]:
        """The requests around a token, so a reader sees which turn had it and what came after.

        Shown (at most `limit`): the last request before it first appeared, the first one that had it and
        the one after, and each that had it as new input with the one after; each marked turn (T) or not
        (-), with the reply the double served and the request's last messages. `marks` (time, what: a
        kill, the input accepted) up to the request after the last one shown are put in their place."""
        recs = self.requests
        if not recs:
            return []
        anywhere = [i for i, r in enumerate(recs) if token in user_side(r)]
        if not anywhere:
            wanted = {len(recs) - 2, len(recs) - 1}
        else:
            fed = [i for i, r in enumerate(recs) if token in new_input(r)]
            wanted = {anywhere[0] - 1, anywhere[0], anywhere[0] + 1, *fed, *(i + 1 for i in fed)}
        picks = sorted(i for i in wanted if 0 <= i < len(recs))[:limit]
        counted = {id(r) for r in self.turns}
        t0 = recs[0].received_at
        after = picks[-1] + 1
        end = recs[after].received_at if after < len(recs) else recs[-1].received_at + 10.0
        events = [(at, 1, f"   ** +{at - t0:6.2f}s {what}") for at, what in marks
                  if recs[picks[0]].received_at <= at <= end]
        for i in picks:
            r = recs[i]
            head = (f"{'T' if id(r) in counted else '-'} +{r.received_at - t0:6.2f}s s={session_id(r)[:8]} "
                    f"turn {r.turn} {r.served} -> {_reply(r)}")
            events.append((r.received_at, 0, "\n".join([head, *(f"      {line}" for line in tail(r, token))])))
        return [line for _at, _order, text in sorted(events) for line in text.split("\n")]


def _reply(rec: RecordedRequest) -> str:
    calls = f" + {len(rec.reply_tool_ids)} call(s) {','.join(t[-6:] for t in rec.reply_tool_ids)}" \
        if rec.reply_tool_ids else ""
    return f"{rec.reply_text[:40]!r}{calls}"


def tail(rec: RecordedRequest, token: str = "", n: int = TAIL) -> list[str]:
    """The last `n` messages of a request, one short line each ("<<token>>" where the token is)."""
    return [_line(m, token) for m in _messages(rec)[-n:]]


def _line(msg: dict[str, Any], token: str) -> str:
    content = msg.get("content")
    parts: list[str] = []
    for block in [{"type": "text", "text": content}] if isinstance(content, str) else _blocks(content):
        kind = block.get("type")
        if kind == "text":
            parts.append(_cut(str(block.get("text", "")), token))
        elif kind == "tool_use":
            parts.append(f"call {str(block.get('name', '')).split('__')[-1]} {str(block.get('id'))[-6:]}")
        elif kind == "tool_result":
            said = " ".join(_said(block.get("content")))
            parts.append(f"result {str(block.get('tool_use_id'))[-6:]} {_cut(said, token)}")
        else:
            parts.append(str(kind))
    return f"{str(msg.get('role', '?'))[:4]}: " + " | ".join(parts)


def _cut(text: str, token: str, width: int = 60) -> str:
    """A short view of a text, centred on the token when it is there."""
    flat = " ".join(text.split())
    at = flat.find(token) if token else -1
    if at < 0:
        return repr(flat[:width] + ("…" if len(flat) > width else ""))
    start = max(0, at - 20)
    piece = flat[start:start + width].replace(token, "<<token>>")
    return repr(("…" if start else "") + piece + ("…" if start + width < len(flat) else ""))


def _carrier(rec: RecordedRequest, token: str) -> str:
    """How a request's new input carried the token: as a tool result, or as user text."""
    msgs = _messages(rec)
    last = max((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), default=-1)
    for msg in msgs[last + 1:]:
        content = msg.get("content")
        if isinstance(content, str) and token in content:
            return "text"
        for block in _blocks(content):
            if token in " ".join(_said([block])):
                return "tool result" if block.get("type") == "tool_result" else "text"
    return "?"


_ID = re.compile(r"\b(?=[\w-]*\d)[\w-]{7,}\b")  # a token or an id (a long word with a digit): shapes group on the rest


def _brief(msg: dict[str, Any]) -> str:
    content = msg.get("content")
    role = "A" if msg.get("role") == "assistant" else "U"
    calls = [str(b.get("name", "")).split("__")[-1] for b in _blocks(content) if b.get("type") == "tool_use"]
    words = _ID.sub("<id>", " ".join(" ".join(_said(content) if role == "U" else [_text(content)]).split()))
    text = repr(words[:32] + ("…" if len(words) > 32 else "")) if words else ""
    return f"{role} {text}{' call ' + ','.join(calls) if calls else ''}".rstrip()


def _fate(rec: RecordedRequest, requests: Sequence[RecordedRequest]) -> str:
    """Why a request that had an input is not a turn: its reply never came back in a later request (lost with
    the process), or it did, and the history the session was resumed with has dropped it again."""
    later = any(tool_ids(r) & set(rec.reply_tool_ids) for r in requests if r.received_at > rec.received_at)
    return "its reply was sent on, then dropped from the resumed history" if later else "its reply was lost"


def shape(view: RunView, token: str) -> str:
    """One line, the same for inputs that went the same way: which requests had it as new input (and whether
    each was a turn), and what follows it in the kept history. Grouping these lines gives the shapes."""
    counted = {id(r) for r in view.turns}
    carriers = [r for r in view.requests if token in new_input(r)]
    had = ", ".join(f"turn ({_carrier(r, token)})" if id(r) in counted
                    else f"not a turn ({_carrier(r, token)}; {_fate(r, view.requests)})" for r in carriers)
    after = "not in the kept history"
    for rec in view.kept:
        msgs = _messages(rec)
        at = next((i for i, m in enumerate(msgs) if m.get("role") == "user" and token in _user_side([m])), None)
        if at is not None:
            after = " → ".join(_brief(m) for m in msgs[at + 1:at + 3]) or "nothing (the session's last request)"
            break
    return f"new input of: {had or 'no request'}; kept history after it: {after}"


# Issue 32's done criterion "each accepted input reaches exactly one model turn as that turn's input" (0 only in
# history, 0 twice). The suite's campaign tests (tests/e2e/test_restart_campaign.py,
# tests/transport/test_fleet_campaign.py) assert it while this is True: on since the run-side hand-over
# (flower_core/runtime/handover.py) gives the model's first turn after a restart what it had not acted on.
EVERY_INPUT_AS_ONE_TURN = True
