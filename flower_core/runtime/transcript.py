"""What a stored session says happened: the facts a new process checks before it resumes one.

A process that dies mid-step leaves its session in the SessionStore up to the last entry the CLI
mirrored. Before resuming it, a new process asks three questions of that transcript (pure functions
over its entries, newest state last):

- ``human_inputs``: what reached the model from the human's side (prompts, tool results) and when,
  so input given to the dead process can be checked for ("was this mail delivered?");
- ``ask_calls``: the questions the model asked and what each call returned, if anything;
- ``cut_off_calls``: tool calls of the last assistant turn that never got a result: the process died
  while they ran, so nobody knows whether they took effect;
- ``unacted``: what reached the session after its last assistant turn (tool results, prompts): the
  model never had a turn on it, so the next one must carry it (handover.py).

``Runtime.session_facts`` gathers the first two over a run's sessions; resume.py answers cut-off
calls before a session resumes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from flower_core.runtime.parked import WITHDRAWN

_MESSAGES = ("user", "assistant")
# Tools that change nothing outside the model's head: cut off, they are simply worth running again.
READ_ONLY_TOOLS = frozenset({"Read", "Glob", "Grep", "LS", "WebFetch", "WebSearch", "TodoWrite", "NotebookRead",
                             "ToolSearch", "mcp__human__inbox"})
CUT_OFF_UNSAFE = ("[This call was cut off: the process running it stopped before its result was recorded, so it "
                  "may or may not have taken effect. Check what it would have changed before running it again.]")
CUT_OFF_SAFE = ("[This call was cut off: the process running it stopped before its result was recorded. It changes "
                "nothing, so run it again if you still need its result.]")


@dataclass(frozen=True)
class HumanInput:
    """One piece of text the model received from the human's side: a prompt or a tool result."""

    at: float
    text: str
    tool_result: bool = False


# Results that close a question's call without anything from the person: ours, the CLI's, parking's.
NOT_FROM_THE_PERSON = ("[This call was cut off", "[Tool call interrupted", "The user doesn't want to proceed",
                       WITHDRAWN)


@dataclass(frozen=True)
class AskCall:
    """One question the model asked with a tool, and the text its call returned (None: no result yet)."""

    call_id: str
    question: str
    result: str | None = None

    @property
    def settled_by_person(self) -> bool:
        """The call returned an outcome of the question (an answer, a decline, a timeout), not a cut."""
        return self.result is not None and not self.result.startswith(NOT_FROM_THE_PERSON)


@dataclass(frozen=True)
class CutOff:
    """A tool call of the session's last assistant turn that never got its result."""

    call_id: str
    tool: str
    args: dict[str, Any]
    entry: dict[str, Any]

    @property
    def safe(self) -> bool:
        return self.tool in READ_ONLY_TOOLS


@dataclass
class SessionFacts:
    """What a run's stored sessions say (see the module docstring)."""

    inputs: list[HumanInput] = field(default_factory=list)
    asks: list[AskCall] = field(default_factory=list)

    def delivered(self, marker: str, *, since: float = 0.0, prompts_only: bool = False) -> int:
        """How many times ``marker`` occurs in inputs at or after ``since`` (``prompts_only``: not in
        tool results)."""
        if not marker:
            return 0
        return sum(i.text.count(marker) for i in self.inputs
                   if i.at >= since and not (prompts_only and i.tool_result))

    def settled(self, question: str) -> bool:
        """Did a call asking ``question`` return the question's outcome to the model?"""
        wanted = _squash(question)
        return any(a.settled_by_person and _squash(a.question) == wanted for a in self.asks)

    def open(self, question: str) -> bool:
        """Is a call asking ``question`` still without a result (a new process restores it)?"""
        wanted = _squash(question)
        return any(a.result is None and _squash(a.question) == wanted for a in self.asks)


def _squash(text: str) -> str:
    return " ".join(text.split()).casefold()


def _main(entries: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [e for e in entries if e.get("type") in _MESSAGES and not e.get("isSidechain")]


def _blocks(entry: Mapping[str, Any]) -> list[Any]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _text_of(content: Any) -> str:
    """The text of a block's content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _args(block: Mapping[str, Any]) -> dict[str, Any]:
    args = block.get("input")
    return dict(args) if isinstance(args, dict) else {}


def _at(entry: Mapping[str, Any]) -> float:
    stamp = entry.get("timestamp")
    if not isinstance(stamp, str):
        return 0.0
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def human_inputs(entries: Iterable[Mapping[str, Any]]) -> list[HumanInput]:
    out: list[HumanInput] = []
    for entry in _main(entries):
        if entry.get("type") != "user":
            continue
        at = _at(entry)
        for block in _blocks(entry):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and block.get("text"):
                out.append(HumanInput(at, str(block["text"])))
            elif block.get("type") == "tool_result":
                out.append(HumanInput(at, _text_of(block.get("content")), tool_result=True))
    return out


def ask_calls(entries: Iterable[Mapping[str, Any]], tool: str) -> list[AskCall]:
    calls: dict[str, AskCall] = {}
    for entry in _main(entries):
        for block in _blocks(entry):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("name") == tool and isinstance(block.get("id"), str):
                calls[block["id"]] = AskCall(block["id"], str(_args(block).get("question", "")))
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in calls:
                call = calls[block["tool_use_id"]]
                calls[call.call_id] = AskCall(call.call_id, call.question, _text_of(block.get("content")))
    return list(calls.values())


def cut_off_calls(entries: Iterable[Mapping[str, Any]]) -> list[CutOff]:
    """Calls of the last assistant message that no result answers (only the last message can have
    them: the Messages API wants every call answered in the very next user message)."""
    main = _main(entries)
    last = next((i for i in range(len(main) - 1, -1, -1) if main[i].get("type") == "assistant"), None)
    if last is None:
        return []
    message = main[last].get("message")
    mid = message.get("id") if isinstance(message, dict) else None
    # The CLI stores one entry per content block, all with the message's id.
    group = [i for i, e in enumerate(main) if e.get("type") == "assistant" and mid is not None
             and isinstance(e.get("message"), dict) and e["message"].get("id") == mid] or [last]
    answered = {b.get("tool_use_id") for e in main[group[0]:] if e.get("type") == "user"
                for b in _blocks(e) if isinstance(b, dict) and b.get("type") == "tool_result"}
    out: list[CutOff] = []
    for i in group:
        for block in _blocks(main[i]):
            if (isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str)
                    and block["id"] not in answered):
                out.append(CutOff(block["id"], str(block.get("name", "")), _args(block), dict(main[i])))
    return out


def unacted(entries: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The main-thread user entries after the session's last assistant entry (all of them when the model
    never spoke): input the model has not had a turn on. Empty when the session ends on the model's turn."""
    main = _main(entries)
    last = next((i for i in range(len(main) - 1, -1, -1) if main[i].get("type") == "assistant"), -1)
    return main[last + 1:]


def calls_by_id(entries: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every main-thread tool call of a session: its id -> (tool name, input)."""
    return {str(b["id"]): (str(b.get("name", "")), _args(b)) for e in _main(entries) if e.get("type") == "assistant"
            for b in _blocks(e) if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("id"), str)}


def user_blocks(entry: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A user entry's content as blocks (a plain string prompt is one text block)."""
    return [b for b in _blocks(entry) if isinstance(b, dict)]


def block_text(block: Mapping[str, Any]) -> str:
    """The text of a text block, or of a tool result's content."""
    return str(block.get("text", "")) if block.get("type") == "text" else _text_of(block.get("content"))


def chain_end(entries: Iterable[Mapping[str, Any]], start: Mapping[str, Any]) -> Mapping[str, Any]:
    """The newest main-thread entry that descends from ``start`` (itself when nothing does): where an entry
    appended after ``start`` must hang, so the chain the CLI follows back from it passes through ``start``
    and through what the CLI stored after it (attachments)."""
    children: dict[str, list[Mapping[str, Any]]] = {}
    for entry in entries:
        parent, own = entry.get("parentUuid"), entry.get("uuid")
        if isinstance(parent, str) and isinstance(own, str) and not entry.get("isSidechain"):
            children.setdefault(parent, []).append(entry)
    current = start
    while children.get(str(current.get("uuid"))):
        current = children[str(current.get("uuid"))][-1]
    return current
