"""What a parked run leaves behind: its record on disk, and the surgery on its stored session.

A parked session ends with the assistant turn whose ``mcp__human__ask`` call is waiting. Before it
resumes, the call's result is written into the session exactly as the CLI writes a tool result
(same entry shape, chained to the call's turn), so the resumed transcript is well formed: every
``tool_use`` is answered by its ``tool_result`` in the next user message. The facts this relies on
were checked against the bundled CLI: docs/parking.md.

``ParkRecord`` (one JSON file per parked session, ``<run_dir>/parked/<session_id>.json``) is what a
new process needs to pick a parked question (or tool approval, and its decision) up again after a restart.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# The CLI continues an interrupted turn by itself when told to (it then sends the stored history plus
# one short user note, and no "No response requested." stand-in turn); its age limit is lifted because
# a parked question may wait for hours. Verified in docs/parking.md.
CONTINUE_ENV = "CLAUDE_CODE_RESUME_INTERRUPTED_TURN"
CONTINUE_PROMPT_ENV = "CLAUDE_CODE_RESUME_PROMPT"
CONTINUE_MAX_AGE_ENV = "CLAUDE_CODE_RESUME_INTERRUPTED_TURN_MAX_AGE_MS"
CONTINUE_MAX_AGE_MS = 10 * 365 * 24 * 3600 * 1000
# Copied from the call's turn onto the result entry, as the CLI itself does.
_INHERITED = ("userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch")
_MESSAGES = ("user", "assistant")
# How the CLI closes an in-flight call when it is interrupted (docs/parking.md, fact 2).
REJECTED = "User rejected tool use"
INTERRUPTED_LINE = "[Request interrupted by user"
# The tool result of a question withdrawn because the person interrupted the run to say something else.
WITHDRAWN = "(The person interrupted the run instead of answering this question; their message follows.)"


def release_store(store: Any) -> None:
    """Let a parked run's session store close its files (SQLiteSessionStore.release) while it waits."""
    release = getattr(store, "release", None)
    if callable(release):
        try:
            release()
        except Exception as exc:  # the files stay open: a cost, never a reason to harm the run
            log.warning("parked run: session store not released: %r", exc)


def continue_env(note: str) -> dict[str, str]:
    """Environment that makes a resumed CLI continue the stored turn, with ``note`` as its user text."""
    return {CONTINUE_ENV: "1", CONTINUE_PROMPT_ENV: note, CONTINUE_MAX_AGE_ENV: str(CONTINUE_MAX_AGE_MS)}


# ---- transcript entries (pure) ------------------------------------------------------------------------
def _content(entry: Mapping[str, Any]) -> list[Any]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def call_entry(entries: list[dict[str, Any]], call_id: str) -> dict[str, Any] | None:
    """The main-thread assistant entry that holds the tool_use ``call_id`` (None if not stored)."""
    for entry in reversed(entries):
        if entry.get("type") != "assistant" or entry.get("isSidechain"):
            continue
        if any(isinstance(b, dict) and b.get("type") == "tool_use" and b.get("id") == call_id
               for b in _content(entry)):
            return entry
    return None


def open_call(entries: list[dict[str, Any]], call_id: str) -> dict[str, Any] | None:
    """The call's entry when it is still the session's last message (nothing answered or followed it)."""
    entry = call_entry(entries, call_id)
    if entry is None:
        return None
    after = entries[entries.index(entry) + 1:]
    return None if any(e.get("type") in _MESSAGES for e in after) else entry


def last_open_call(entries: list[dict[str, Any]], tool: str) -> tuple[str, dict[str, Any], float] | None:
    """(call id, input, asked at) when the session's last turn is the assistant's one call to ``tool``,
    unanswered: what a process that died while its question waited leaves in the store."""
    tail: list[dict[str, Any]] = []
    for entry in reversed(entries):
        if entry.get("isSidechain") or entry.get("type") not in _MESSAGES:
            continue
        if entry.get("type") == "user":
            break
        tail.append(entry)
    calls = [b for e in tail for b in _content(e) if isinstance(b, dict) and b.get("type") == "tool_use"]
    if len(calls) != 1 or calls[0].get("name") != tool or not isinstance(calls[0].get("id"), str):
        return None
    args = calls[0].get("input")
    call_id = calls[0]["id"]
    if open_call(entries, call_id) is None:
        return None
    stamp = next((e.get("timestamp") for e in tail if isinstance(e.get("timestamp"), str)), None)
    try:
        asked_at = datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp() if stamp else 0.0
    except ValueError:
        asked_at = 0.0
    return call_id, args if isinstance(args, dict) else {}, asked_at


def _is_cli_rejection(entry: Mapping[str, Any], call_id: str) -> bool:
    """The CLI's own closing of a call on an interrupt: a rejected result, or the interruption line."""
    if entry.get("type") != "user":
        return False
    if entry.get("toolUseResult") == REJECTED and any(
            isinstance(b, dict) and b.get("tool_use_id") == call_id for b in _content(entry)):
        return True
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    texts = [content] if isinstance(content, str) else [
        b.get("text") for b in _content(entry) if isinstance(b, dict) and b.get("type") == "text"]
    return bool(texts) and all(isinstance(t, str) and t.startswith(INTERRUPTED_LINE) for t in texts)


def closed_by_cli(entries: list[dict[str, Any]], call_id: str) -> str | None:
    """The uuid of the entry holding ``call_id`` when all that follows it is the CLI's own closing of it on an
    interrupt: what a process killed in the middle of parking it leaves (the CLI wrote its rejection, the
    park had not cut it yet). Cutting after that entry makes the call open again."""
    entry = call_entry(entries, call_id)
    if entry is None or not isinstance(entry.get("uuid"), str):
        return None
    main = [e for e in entries if not e.get("isSidechain") and e.get("type") in _MESSAGES]
    after = main[main.index(entry) + 1:] if entry in main else []
    return str(entry["uuid"]) if after and all(_is_cli_rejection(e, call_id) for e in after) else None


def interrupted_call(entries: list[dict[str, Any]], tool: str) -> str | None:
    """The uuid of the entry holding the last call to ``tool`` when all that follows it is the CLI's
    own closing of it on an interrupt: what a process stopped (SIGTERM, a park cut short) while its
    question waited leaves. Cutting after that entry leaves a session ``last_open_call`` adopts."""
    main = [e for e in entries if not e.get("isSidechain") and e.get("type") in _MESSAGES]
    for i in range(len(main) - 1, -1, -1):
        entry = main[i]
        if entry.get("type") != "assistant":
            continue
        calls = [b for b in _content(entry) if isinstance(b, dict) and b.get("type") == "tool_use"]
        if len(calls) != 1 or calls[0].get("name") != tool or not isinstance(entry.get("uuid"), str):
            return None
        after = main[i + 1:]
        if after and all(_is_cli_rejection(e, str(calls[0].get("id"))) for e in after):
            return str(entry["uuid"])
        return None
    return None


def result_entry(call: Mapping[str, Any], call_id: str, text: str, *, is_error: bool = False,
                 now: float | None = None) -> dict[str, Any]:
    """The user entry that answers ``call_id`` with ``text``, shaped like the CLI's own for an MCP result."""
    block: dict[str, Any] = {"tool_use_id": call_id, "type": "tool_result",
                             "content": [{"type": "text", "text": text}]}
    if is_error:
        block["is_error"] = True
    stamp = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    entry: dict[str, Any] = {
        "parentUuid": call.get("uuid"),
        "isSidechain": False,
        "type": "user",
        "message": {"role": "user", "content": [block]},
        "uuid": str(uuid.uuid4()),
        "timestamp": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "toolUseResult": [{"type": "text", "text": text}],
        "sourceToolAssistantUUID": call.get("uuid"),
    }
    entry.update({k: call[k] for k in _INHERITED if k in call})
    return entry


def prompt_entry(after: Mapping[str, Any], text: str, *, now: float | None = None) -> dict[str, Any]:
    """A user prompt entry chained after ``after`` (any entry of the session), shaped like the CLI's own."""
    stamp = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    entry: dict[str, Any] = {
        "parentUuid": after.get("uuid"),
        "isSidechain": False,
        "promptId": str(uuid.uuid4()),
        "type": "user",
        "message": {"role": "user", "content": text},
        "uuid": str(uuid.uuid4()),
        "timestamp": stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
    }
    entry.update({k: after[k] for k in _INHERITED if k in after})
    return entry


# ---- the record ------------------------------------------------------------------------------------
@dataclass
class ParkRecord:
    """A parked question: which session and call it closes, and what to ask again in a new process."""

    session_id: str
    call_id: str
    step: str
    question: str
    options: list[str] = field(default_factory=list)
    asked_at: float = 0.0
    parked_at: float = field(default_factory=time.time)
    # Inbox mail still queued when the process went away: [id, text] pairs (plain texts in older records).
    mail: list[Any] = field(default_factory=list)
    # A parked tool approval (kind "approval"): the call's tool and whole input, and once a person decided
    # it, the decision ("once" | "run" | "deny") and their words: kept before they are told it is decided.
    kind: str = ""
    tool: str = ""
    input: dict[str, Any] = field(default_factory=dict)
    decision: str = ""
    words: str = ""

    def kept_mail(self) -> list[tuple[str, str]] | list[str]:
        """The kept mail in the shape HumanChannel.requeue takes."""
        if all(isinstance(m, list | tuple) and len(m) == 2 for m in self.mail):
            return [(str(m[0]), str(m[1])) for m in self.mail]
        return [str(m) for m in self.mail if isinstance(m, str)]


class ParkRecords:
    """The records of one run_dir, one small JSON file each (written atomically; unreadable = absent)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    def _path(self, session_id: str) -> Path:
        return self.folder / f"{Path(session_id).name}.json"

    def save(self, record: ParkRecord) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(record.session_id)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(dataclasses.asdict(record), ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)

    def load(self, session_id: str) -> ParkRecord | None:
        try:
            raw = json.loads(self._path(session_id).read_text(encoding="utf-8"))
            names = {f.name for f in dataclasses.fields(ParkRecord)}
            record = ParkRecord(**{k: v for k, v in raw.items() if k in names})
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError) as exc:
            log.warning("park record for %s unreadable: %r", session_id, exc)
            return None
        return record if record.session_id == session_id else None

    def delete(self, session_id: str) -> None:
        try:
            self._path(session_id).unlink()
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("park record for %s not deleted: %r", session_id, exc)

    def all(self) -> list[ParkRecord]:
        if not self.folder.is_dir():
            return []
        found = (self.load(p.stem) for p in sorted(self.folder.glob("*.json")))
        return [r for r in found if r is not None]
