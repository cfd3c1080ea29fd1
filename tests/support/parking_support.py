"""Helpers for the parking tests: the CLI processes of this test process, and events to wait on."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from flower_core.devmodel.server import RecordedRequest
from flower_core.events import Event

ASK = "mcp__human__ask"
INBOX = "mcp__human__inbox"


def ask_call(question: str, options: list[str] | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"question": question}
    if options is not None:
        args["options"] = options
    return {"tool": ASK, "input": args}


def cli_children() -> list[int]:
    """Pids of the Claude Code CLI processes this test process started (its direct children)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().decode(errors="replace")
        except (OSError, IndexError):
            continue
        if int(fields[1]) == me and fields[0] != "Z" and "claude" in cmd:
            found.append(int(entry))
    return found


def alive(pid: int) -> bool:
    """Is the process there and not a zombie?"""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Events:
    """An on_event sink that keeps every event; ``until`` waits for one without sleeping.

    ``on_asked`` runs inside the "asked" event, i.e. while the asking tool call (and its CLI) is live.
    """

    def __init__(self, on_asked: Callable[[Event], None] | None = None) -> None:
        self.events: list[Event] = []
        self.on_asked = on_asked
        self._changed = asyncio.Event()

    def __call__(self, ev: Event) -> None:
        self.events.append(ev)
        if self.on_asked is not None and ev.kind == "ask" and ev.payload.get("state") == "asked":
            self.on_asked(ev)
        self._changed.set()

    async def until(self, pred: Callable[[Event], bool], timeout: float = 60.0) -> Event:
        async def loop() -> Event:
            seen = 0
            while True:
                self._changed.clear()
                for ev in self.events[seen:]:
                    if pred(ev):
                        return ev
                seen = len(self.events)
                await self._changed.wait()
        return await asyncio.wait_for(loop(), timeout)

    def system(self, text: str) -> list[Event]:
        return [e for e in self.events if e.kind == "system" and e.text == text]

    def asks(self) -> list[tuple[str, str]]:
        return [(e.payload["id"], e.payload["state"]) for e in self.events
                if e.kind == "ask" and e.payload.get("kind") != "mail"]


def parked(ev: Event) -> bool:
    return ev.kind == "system" and ev.text == "parked"


def last_two(req: RecordedRequest) -> list[dict[str, Any]]:
    """The request's last two messages, blocks reduced to what the model reads."""
    out = []
    for m in req.body["messages"][-2:]:
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        blocks = []
        for b in content:
            if b.get("type") == "tool_result":
                inner = b.get("content")
                text = inner if isinstance(inner, str) else "".join(x.get("text", "") for x in inner or [])
                blocks.append(("tool_result", b.get("tool_use_id"), text))
            elif b.get("type") == "tool_use":
                blocks.append(("tool_use", b.get("id"), b.get("name")))
            else:
                blocks.append((b.get("type"), "", b.get("text", "")))
        out.append({"role": m["role"], "blocks": blocks})
    return out
