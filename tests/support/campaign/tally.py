"""The count: what the API accepted (the ledger) against what the model double received. Pure functions.

A run's requests are the ones whose first user message holds its task token. They are grouped by the
session id the CLI sends in `metadata.user_id`; a session's last request carries its whole
conversation. A session is left out when a later session's last request carries every tool call
its own did (it was resumed or forked into that one, history and all); the others are *kept*, and a
run with more than one kept session is said to span several sessions. Each accepted token is counted
in the user side of the kept sessions' last requests (user text and tool results, never what the
model said): once = reached, zero = lost, more = duplicated.

One allowance, for mail only: mail to a run that finished, accepted after the model's last inbox read
(no inbox turn was served to the run after the mail was accepted), is *late*: the scenario never
looked again, so it could not have arrived. It is shown on its own line, never among the reached;
mail to a run that never finished is lost, not late. Inputs the API refused or never answered are
not expected anywhere; those found anyway are counted apart (`unaccepted_reached`). A run is
*finished* when the double served it the model's last word; every other run the API accepted is
*stuck*, whatever the bot's own status says.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from flower_core.devmodel import RecordedRequest
from tests.support.campaign.ledger import Accepted
from tests.support.campaign.script import Script


@dataclass(frozen=True)
class Session:
    session_id: str
    last: RecordedRequest
    tool_ids: frozenset[str]


@dataclass
class KindCount:
    accepted: int = 0
    reached: int = 0
    lost: int = 0
    duplicated: int = 0
    late: int = 0
    lost_tokens: list[str] = field(default_factory=list)
    duplicated_tokens: list[str] = field(default_factory=list)


@dataclass
class Figures:
    kinds: dict[str, KindCount]
    runs_started: int
    runs_finished: int
    stuck: list[str]
    multi_session: list[str]
    requests: int  # model requests of campaign runs
    unaccepted_reached: int = 0  # inputs the API refused (or never answered) that reached the model anyway

    def of(self, kind: str) -> KindCount:
        return self.kinds.get(kind, KindCount())

    @property
    def lost(self) -> int:
        return sum(k.lost for k in self.kinds.values())

    @property
    def duplicated(self) -> int:
        return sum(k.duplicated for k in self.kinds.values())


def session_id(rec: RecordedRequest) -> str:
    meta = rec.body.get("metadata")
    raw = meta.get("user_id") if isinstance(meta, dict) else None
    try:
        found = json.loads(raw).get("session_id") if isinstance(raw, str) else None
    except (ValueError, AttributeError):
        found = None
    return str(found or "")


def _blocks(content: Any) -> list[dict[str, Any]]:
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def tool_ids(rec: RecordedRequest) -> frozenset[str]:
    return frozenset(str(b.get("id")) for m in rec.body.get("messages", []) if m.get("role") == "assistant"
                     for b in _blocks(m.get("content")) if b.get("type") == "tool_use")


def user_side(rec: RecordedRequest) -> str:
    """Everything the human side of the conversation carried: user text and tool results."""
    parts: list[str] = []

    def add(content: Any) -> None:
        if isinstance(content, str):
            parts.append(content)
        for block in _blocks(content):
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "tool_result":
                add(block.get("content"))

    for msg in rec.body.get("messages", []):
        if isinstance(msg, dict) and msg.get("role") == "user":
            add(msg.get("content"))
    return "\n".join(parts)


def kept_sessions(requests: list[RecordedRequest]) -> list[Session]:
    last: dict[str, RecordedRequest] = {}
    for rec in requests:  # in arrival order: the last one of each session wins
        last[session_id(rec)] = rec
    sessions = [Session(sid, rec, tool_ids(rec)) for sid, rec in last.items()]
    return [s for s in sessions
            if not any(t is not s and t.last.received_at > s.last.received_at and s.tool_ids <= t.tool_ids
                       for t in sessions)]


def tally(accepted: Iterable[Accepted], requests: Iterable[RecordedRequest], script: Script,
          not_accepted: Iterable[Accepted] = ()) -> Figures:
    entries = list(accepted)
    tasks = {a.run_id: a.token for a in entries if a.kind == "task"}
    by_run: dict[str, list[RecordedRequest]] = defaultdict(list)
    for rec in requests:
        if rec.path != "/v1/messages":
            continue
        text = rec.first_user_text
        run = next((r for r, token in tasks.items() if token in text), None)
        if run is not None:
            by_run[run].append(rec)
    seen: dict[str, str] = {}
    inbox_times: dict[str, list[float]] = defaultdict(list)
    finished, multi = set(), []
    for run, recs in by_run.items():
        kept = kept_sessions(recs)
        if len(kept) > 1:
            multi.append(run)
        seen[run] = "\n".join(user_side(s.last) for s in kept)
        inbox_times[run] = [r.received_at for r in recs if script.served_inbox(r.turn, r.served)]
        if any(script.is_end(r.turn, r.served) for r in recs):
            finished.add(run)
    kinds: dict[str, KindCount] = {}
    for a in entries:
        if a.kind == "task":
            continue
        count = kinds.setdefault(a.kind, KindCount())
        count.accepted += 1
        times = seen.get(a.run_id, "").count(a.token)
        if times == 1:
            count.reached += 1
        elif times > 1:
            count.duplicated += 1
            count.duplicated_tokens.append(f"{a.run_id}:{a.token}")
        elif a.kind == "mail" and a.run_id in finished and not any(t > a.at for t in inbox_times[a.run_id]):
            count.late += 1
        else:
            count.lost += 1
            count.lost_tokens.append(f"{a.run_id}:{a.token}")
    unaccepted = sum(1 for a in not_accepted if a.kind != "task" and a.token in seen.get(a.run_id, ""))
    return Figures(kinds, len(tasks), len(finished), sorted(set(tasks) - finished), sorted(multi),
                   sum(len(v) for v in by_run.values()), unaccepted)
