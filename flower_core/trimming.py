"""TrimmingSessionStore: what a resumed session is fed back, rewritten at load() time only.

The SDK materialises a resumed session from ``SessionStore.load()``; that call is the one place where
history can be changed before the model reads it again. Everything the CLI appended stays in SQLite
exactly as written; only the copy handed back on load is rewritten, in two passes (the original
flower's, same names and defaults):

- expiry (``EphemeralPolicy``): the result of a short read-only glance (``git status``, ``ls``: the
  commands ``is_ephemeral`` accepts, the same set ``delegate_guard`` lets a coordinator run) is
  misleading once it is old. All but the last ``keep_recent`` such Bash results get a one-line note
  instead of their text. Nothing is archived: running the command again is cheaper than reading it.
- trimming (``TrimPolicy``): an old and large tool result (``min_chars`` or more, all but the last
  ``keep_recent``) is written to ``<workspace>/<spill_dirname>/<sha256[:16]>.txt`` and its text is
  replaced by a pointer the model can ``Read``. Only plain text is trimmed; images and documents stay.

Two rules keep the history valid for the API: a ``tool_result`` block is never removed (only its
content changes), and compaction summaries / meta entries are never touched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from claude_agent_sdk.types import SessionKey, SessionStoreEntry

from flower_core.guards import is_ephemeral
from flower_core.session_store import SQLiteSessionStore

Entry = dict[str, Any]


@dataclass
class TrimPolicy:
    """Which tool results are spilled to a file on load. ``Runtime(trim=False)`` gives ``enabled=False``."""

    keep_recent: int = 20
    min_chars: int = 2000
    # Relative to the workspace, and inside it: the agent's Read must reach the spilled file.
    spill_dirname: str = ".flower/spill"
    enabled: bool = True

    def placeholder(self, path: str, n: int) -> str:
        return f"[tool result moved to a file: {n} characters, all of it in {path}; Read it if you need it]"


@dataclass
class EphemeralPolicy:
    """Which glance results (Bash commands ``is_ephemeral`` accepts) are marked stale on load."""

    enabled: bool = True
    keep_recent: int = 6
    # Longer output is left to TrimPolicy, which keeps it in a file.
    max_chars: int = 2000
    text: str = "[the output of {cmd} is stale ({age} results ago) and may no longer be true; run it again if needed]"

    def placeholder(self, cmd: str, age: int) -> str:
        lines = cmd.strip().splitlines()
        return self.text.format(cmd=f"`{lines[0][:60] if lines else ''}`", age=age)


def message_blocks(entry: Entry) -> list[Any]:
    """The content blocks of an entry's message ([] when its content is a plain string or absent)."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def untouchable(entry: Entry) -> bool:
    """A compaction summary is the only trace of the history it replaced; meta entries are the CLI's own."""
    return bool(entry.get("isCompactSummary") or entry.get("isMeta"))


def plain_text(content: Any) -> str | None:
    """A result's text when it is text only (None for images/documents or no text at all)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    if any(isinstance(b, dict) and b.get("type") in ("image", "document") for b in content):
        return None
    texts = [str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return "".join(texts) if texts else None


def tool_results(entries: list[Entry]) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(entry index, block index, block) of every tool_result a rewrite may touch, in order."""
    for i, entry in enumerate(entries):
        if untouchable(entry):
            continue
        for j, block in enumerate(message_blocks(entry)):
            if isinstance(block, dict) and block.get("type") == "tool_result":
                yield i, j, block


def with_content(entries: list[Entry], i: int, j: int, content: Any) -> None:
    """Replace block j's content of entry i in place of a copy: the loaded rows are never shared."""
    entry = dict(entries[i])
    message = dict(entry["message"])
    blocks = list(message["content"])
    blocks[j] = {**blocks[j], "content": content}
    message["content"] = blocks
    entry["message"] = message
    entries[i] = entry


def bash_commands(entries: list[Entry]) -> dict[str, str]:
    """tool_use id -> command of every Bash call (a result names only the id of its call)."""
    found: dict[str, str] = {}
    for entry in entries:
        for block in message_blocks(entry):
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == "Bash":
                command = (block.get("input") or {}).get("command")
                if isinstance(command, str) and block.get("id"):
                    found[str(block["id"])] = command
    return found


def _older_than(sites: list[Any], keep_recent: int) -> list[Any]:
    return sites[:-keep_recent] if keep_recent > 0 else sites


class TrimmingSessionStore(SQLiteSessionStore):
    """A SQLite session store whose ``load()`` expires stale glances and spills old large results.

    ``last_report`` says what the last load did: ``expired``, ``cleared``, ``kept``, ``chars_saved``.
    ``load_stored()`` still gives the transcript as stored (the runtime's own readers use it).
    """

    def __init__(self, path: str | Path, workspace: str | Path, policy: TrimPolicy | None = None,
                 ephemeral: EphemeralPolicy | None = None) -> None:
        super().__init__(path)
        self.workspace = Path(workspace).resolve()
        self.policy = policy if policy is not None else TrimPolicy()
        self.ephemeral = ephemeral if ephemeral is not None else EphemeralPolicy()
        self.last_report: dict[str, int] = {}

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        stored = await self.load_stored(key)
        if stored is None:
            return None
        self.last_report = {}
        entries = [cast(Entry, e) for e in stored]
        if self.ephemeral.enabled:
            entries = self.expire(entries)
        if self.policy.enabled:
            entries = self.trim(entries)
        return [cast(SessionStoreEntry, e) for e in entries]

    def expire(self, entries: list[Entry]) -> list[Entry]:
        """Replace the text of all but the newest ``keep_recent`` glance results with a stale note."""
        policy, commands = self.ephemeral, bash_commands(entries)
        sites: list[tuple[int, int, str]] = []
        for i, j, block in tool_results(entries):
            command = commands.get(str(block.get("tool_use_id")))
            text = plain_text(block.get("content"))
            if command and is_ephemeral(command) and text is not None and len(text) <= policy.max_chars:
                sites.append((i, j, command))
        old = _older_than(sites, policy.keep_recent)
        out = list(entries)
        for n, (i, j, command) in enumerate(old):
            with_content(out, i, j, policy.placeholder(command, len(sites) - n))
        self.last_report["expired"] = len(old)
        return out

    def trim(self, entries: list[Entry]) -> list[Entry]:
        """Spill all but the newest ``keep_recent`` large text results to files and point at them."""
        policy = self.policy
        sites = [(i, j, text) for i, j, block in tool_results(entries)
                 if (text := plain_text(block.get("content"))) is not None and len(text) >= policy.min_chars]
        old = _older_than(sites, policy.keep_recent)
        out, saved = list(entries), 0
        if old:
            folder = self.workspace / policy.spill_dirname
            folder.mkdir(parents=True, exist_ok=True)
        for i, j, text in old:
            target = folder / (hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] + ".txt")
            if not target.exists():  # same text, same name: written once however often it is loaded
                target.write_text(text, encoding="utf-8")
            with_content(out, i, j, policy.placeholder(str(target.relative_to(self.workspace)), len(text)))
            saved += len(text)
        self.last_report.update(cleared=len(old), kept=len(sites) - len(old), chars_saved=saved)
        return out


def trim_report(store: TrimmingSessionStore) -> str:
    """One line for a UI's log about the store's last load."""
    report = store.last_report
    cleared, expired = report.get("cleared", 0), report.get("expired", 0)
    if not cleared and not expired:
        return "nothing trimmed"
    if not cleared:
        return f"{expired} stale glance result(s) marked expired"
    return (f"trimmed {cleared} tool result(s) (the last {report.get('kept', 0)} kept), "
            f"saving ~{report.get('chars_saved', 0) // 4} tokens")
