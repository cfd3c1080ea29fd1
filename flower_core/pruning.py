"""PruningSessionStore: the Runtime's default store; on load it also drops what is not conversation.

On top of TrimmingSessionStore's expiry and trimming, ``load()`` (and only load: SQLite keeps every
entry as the CLI wrote it) removes, as the original flower's does (``PrunePolicy``):

- old denied calls: a call a permission hook or rule refused never ran, its result says only "no",
  and a pile of them teaches the model to stop trying what is allowed. The CLI marks the refusal's
  entry ``toolDenialKind == "permission-rule"``; all but the last ``keep_denials`` lose both their
  ``tool_use`` and their ``tool_result`` block (only those blocks: the rest of the message stays);
- synthetic API error messages (the CLI writes "API Error: ..." as an assistant turn with model
  ``<synthetic>``): a log line, not something the model said. One is kept: the last message of the
  transcript (no user or assistant entry after it), because the bundled CLI takes a session that
  ends on the user's prompt for an interrupted turn and answers it with a made-up "No response
  requested." (it never sends synthetic turns to the model anyway);
- the error results an interrupt leaves ("[Request interrupted ...]") get a neutral note instead
  (the block stays: a call without its result is refused by the API);
- a call left with no result at all (``heal_orphans``) gets one, in a user entry right after it.

The transcript is a chain of ``parentUuid`` links that the CLI walks back from the leaf; removing an
entry re-links its children to its nearest surviving ancestor (``relink`` is given every entry,
dropped ones included, so it can walk up through them).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from claude_agent_sdk.types import SessionKey, SessionStoreEntry

from flower_core.trimming import EphemeralPolicy, TrimmingSessionStore, TrimPolicy, message_blocks

Entry = dict[str, Any]
DENIED = "permission-rule"
_INTERRUPTED = "[Request interrupted"
# Copied onto a healing entry so it looks like its neighbours to the CLI.
_CARRIED = ("sessionId", "cwd", "gitBranch", "version", "agentId", "isSidechain", "userType", "entrypoint")


@dataclass
class PrunePolicy:
    drop_api_errors: bool = True
    neutralize_interrupts: bool = True
    interrupt_text: str = "[the previous turn was interrupted here; this tool call produced no result]"
    # Off here: the runtime answers cut-off calls itself (runtime/resume.py, parking), and a made-up result
    # would answer a question that is still waiting for its person before parking can.
    heal_orphans: bool = False
    orphan_text: str = "[this call was interrupted and has no result; run it again if it is still needed]"
    # One, not zero: the newest refusal stops the model retrying the same blocked call in a loop.
    keep_denials: int = 1


def is_api_error(entry: Entry) -> bool:
    """An "API Error: ..." turn the CLI wrote. Not every ``<synthetic>`` turn: the CLI's own "No response
    requested." placeholder keeps user and assistant turns alternating, and dropping it shifts the turns."""
    if entry.get("isApiErrorMessage"):
        return True
    message = entry.get("message")
    if not isinstance(message, dict) or message.get("model") != "<synthetic>":
        return False
    return any(isinstance(b, dict) and str(b.get("text", "")).startswith("API Error") for b in message_blocks(entry))


def denied_call(entry: Entry) -> str | None:
    """The tool_use id a permission refusal answers (None when the entry is not one)."""
    if entry.get("toolDenialKind") != DENIED:
        return None
    return next((str(b["tool_use_id"]) for b in message_blocks(entry)
                 if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id")), None)


def _names_call(block: Any, ids: set[str]) -> bool:
    if not isinstance(block, dict):
        return False
    if block.get("type") == "tool_use":
        return block.get("id") in ids
    return block.get("type") == "tool_result" and block.get("tool_use_id") in ids


def without_calls(entry: Entry, ids: set[str]) -> Entry | None:
    """The entry without the tool_use/tool_result blocks of ``ids``; None when nothing is left of it."""
    blocks = message_blocks(entry)
    kept = [b for b in blocks if not _names_call(b, ids)]
    if len(kept) == len(blocks):
        return entry
    if not kept:
        return None
    out = {**entry, "message": {**entry["message"], "content": kept}}
    out.pop("toolUseResult", None)  # the refusal text is kept there a second time
    return out


def _interrupt_leftover(block: Any) -> bool:
    return (isinstance(block, dict) and block.get("type") == "tool_result" and bool(block.get("is_error"))
            and _INTERRUPTED in str(block.get("content")))


def relink(entries: list[Entry], drop: set[str]) -> list[Entry]:
    """``entries`` without the uuids in ``drop``, each child re-linked to its nearest kept ancestor.

    ``entries`` must still hold the dropped ones: their parents are how the chain is walked up."""
    if not drop:
        return entries
    parent = {e["uuid"]: e.get("parentUuid") for e in entries if isinstance(e.get("uuid"), str)}

    def kept_ancestor(uid: Any) -> Any:
        seen: set[str] = set()
        while uid in drop and uid not in seen:
            seen.add(uid)
            uid = parent.get(uid)
        return uid

    return [e if e.get("parentUuid") not in drop else {**e, "parentUuid": kept_ancestor(e["parentUuid"])}
            for e in entries if e.get("uuid") not in drop]


def healed(entries: list[Entry], text: str) -> list[Entry]:
    """Give every call with no result anywhere a result saying so, right after the entry holding it."""
    answered = {b.get("tool_use_id") for e in entries for b in message_blocks(e)
                if isinstance(b, dict) and b.get("type") == "tool_result"}
    out: list[Entry] = []
    renamed: dict[str, str] = {}  # parent uuid -> the healing entry that now sits between
    for entry in entries:
        if entry.get("parentUuid") in renamed:
            entry = {**entry, "parentUuid": renamed.pop(entry["parentUuid"])}
        out.append(entry)
        open_ids = [str(b["id"]) for b in message_blocks(entry) if isinstance(b, dict)
                    and b.get("type") == "tool_use" and b.get("id") and b["id"] not in answered]
        if not open_ids:
            continue
        answered.update(open_ids)
        heal = {k: entry[k] for k in _CARRIED if k in entry}
        # The same uuid on every load: what the resumed CLI appends after it must find it next time too.
        heal_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"flower-heal:{entry.get('uuid')}:{','.join(open_ids)}"))
        heal.update(type="user", uuid=heal_id, parentUuid=entry.get("uuid"),
                    message={"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": i, "content": text, "is_error": False}
                        for i in open_ids]})
        out.append(heal)
        if isinstance(entry.get("uuid"), str):
            renamed[entry["uuid"]] = heal["uuid"]
    return out


class PruningSessionStore(TrimmingSessionStore):
    """TrimmingSessionStore plus pruning on load. ``pruned`` and ``denials_dropped`` count the last load's.

    The fourth positional parameter is ``prune`` here but ``ephemeral`` in the parent: pass by keyword."""

    def __init__(self, path: str | Path, workspace: str | Path, policy: TrimPolicy | None = None,
                 prune: PrunePolicy | None = None, ephemeral: EphemeralPolicy | None = None) -> None:
        super().__init__(path, workspace, policy, ephemeral)
        self.prune_policy = prune if prune is not None else PrunePolicy()
        self.pruned = 0
        self.denials_dropped = 0

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        entries = await super().load(key)
        if entries is None:
            return None
        return [cast(SessionStoreEntry, e) for e in self.prune([cast(Entry, e) for e in entries])]

    def prune(self, entries: Iterable[Entry]) -> list[Entry]:
        policy, entries = self.prune_policy, list(entries)
        denied = [d for e in entries if (d := denied_call(e)) is not None]
        dead = set(denied[:-policy.keep_denials] if policy.keep_denials > 0 else denied)
        self.denials_dropped = len(dead)
        out: list[Entry] = []
        drop: set[str] = set()
        last = max((n for n, e in enumerate(entries) if e.get("type") in ("user", "assistant")), default=-1)
        for n, entry in enumerate(entries):
            rest = without_calls(entry, dead) if dead else entry
            gone = rest is None or (policy.drop_api_errors and is_api_error(entry) and n != last)
            if gone and isinstance(entry.get("uuid"), str):
                drop.add(entry["uuid"])
                out.append(entry)  # relink() removes it, after walking through it
                continue
            entry = rest if rest is not None else entry
            if policy.neutralize_interrupts and any(_interrupt_leftover(b) for b in message_blocks(entry)):
                blocks = [{**b, "content": policy.interrupt_text, "is_error": False} if _interrupt_leftover(b) else b
                          for b in message_blocks(entry)]
                entry = {**entry, "message": {**entry["message"], "content": blocks}}
            out.append(entry)
        self.pruned = len(drop)
        out = relink(out, drop)
        return healed(out, policy.orphan_text) if policy.heal_orphans else out
