"""normalize(): one SDK message -> 0..N Events.

The SDK is imported here and nowhere in the adapters, so front ends never see its types. normalize() never raises:
a run must not die because the CLI grew a new message shape, so every branch degrades to fewer or "unknown" events.
Payloads hold only JSON-safe values; the SDK object itself rides on Event.raw.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    TaskNotificationMessage,
    TaskProgressMessage,
    TaskStartedMessage,
    TaskUpdatedMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk.types import (
    ConversationResetMessage,
    ServerToolResultBlock,
    ServerToolUseBlock,
    StreamEvent,
)

from flower_core.events import PARTIAL, Event, EventKind, context_of, json_safe, short_str

__all__ = ["SYNTHETIC_MODEL", "normalize", "tool_summary"]

SYNTHETIC_MODEL = "<synthetic>"
TOOL_SUMMARY_MAX = 200
TOOL_RESULT_MAX = 500
_SUMMARY_KEYS = ("file_path", "command", "pattern")
_FALLBACK_SUMMARY_KEYS = ("description", "prompt", "query", "url", "plan")
_TASK_FIELDS = ("task_id", "status", "description", "tool_use_id", "summary", "task_type", "last_tool_name", "usage",
               "patch")
_TOOL_USE = (ToolUseBlock, ServerToolUseBlock)
_TOOL_RESULT = (ToolResultBlock, ServerToolResultBlock)
_SEQUENCES = (list, tuple)
_API_STATUS = re.compile(r"API Error:\s*(\d{3})\b")


def _text(value: Any) -> str:
    if type(value) is str:
        return value
    return "" if value is None else short_str(value, 1_000_000)


def tool_summary(tool_input: Any) -> str:
    """One line for a tool call: the path/command/pattern it touches, else what it is about, else its JSON
    ("" for no input at all: `{}` says nothing to a person)."""
    if isinstance(tool_input, dict):
        if not tool_input:
            return ""
        for keys in (_SUMMARY_KEYS, _FALLBACK_SUMMARY_KEYS):
            for key in keys:
                v = tool_input.get(key)
                if isinstance(v, str) and v:
                    return _clip(v, TOOL_SUMMARY_MAX)
    try:
        dumped = json.dumps(json_safe(tool_input), ensure_ascii=False, separators=(",", ":"))
    except Exception:
        dumped = ""
    return _clip(dumped, TOOL_SUMMARY_MAX)


def _clip(s: str, limit: int) -> str:
    s = str.__str__(s)
    return s if len(s) <= limit else s[: limit - 1] + "…"


def _result_text(content: Any) -> str:
    """DESIGN: a string result -> its first 500 chars; a list -> its text parts joined; anything else -> ''."""
    if isinstance(content, str):
        return str.__str__(content[:TOOL_RESULT_MAX])
    if isinstance(content, list):
        parts = []
        for part in content:
            t = part.get("text") if isinstance(part, dict) else getattr(part, "text", None)
            if isinstance(t, str) and (not isinstance(part, dict) or part.get("type", "text") == "text"):
                parts.append(t)
        return str.__str__("\n".join(parts)[:TOOL_RESULT_MAX])
    return ""


def _thread(message: Any) -> dict[str, Any]:
    """Subagent tagging: the CLI sets parent_tool_use_id on everything a subagent says or is told."""
    parent = getattr(message, "parent_tool_use_id", None)
    if parent:
        return {"subagent": True, "parent_tool_use_id": json_safe(parent)}
    return {"subagent": False}


def _blocks(content: Any) -> list[Any] | tuple[Any, ...]:
    return content if isinstance(content, _SEQUENCES) else ()


def _block_events(block: Any, message: Any, base: dict[str, Any], text_kind: EventKind) -> list[Event]:
    """Events for one content block. A text block is "text" from the model and "prompt" when sent to it."""
    if isinstance(block, TextBlock):
        text = _text(block.text)
        return [Event(text_kind, text, payload=dict(base), raw=message)] if text else []
    if isinstance(block, ThinkingBlock):
        text = _text(block.thinking)
        return [Event("thinking", text, payload=dict(base), raw=message)] if text else []
    if isinstance(block, _TOOL_USE):
        payload = {"id": json_safe(block.id), "input": json_safe(block.input), **base,
                   **({"server": True} if isinstance(block, ServerToolUseBlock) else {})}
        return [Event("tool_call", tool_summary(block.input), tool=_text(block.name), payload=payload, raw=message)]
    if isinstance(block, _TOOL_RESULT):
        payload = {"tool_use_id": json_safe(block.tool_use_id),
                   "is_error": getattr(block, "is_error", None) is True, **base,
                   **({"server": True} if isinstance(block, ServerToolResultBlock) else {})}
        return [Event("tool_result", _result_text(block.content), payload=payload, raw=message)]
    return [Event("unknown", type(block).__name__, raw=message)]


def _content_events(message: Any, content: Any, base: dict[str, Any], text_kind: EventKind) -> list[Event]:
    if isinstance(content, str):  # a plain prompt (or a malformed assistant message: say it rather than drop it)
        text = _text(content)
        return [Event(text_kind, text, payload=base, raw=message)] if text else []
    events: list[Event] = []
    for block in _blocks(content):
        try:
            events.extend(_block_events(block, message, base, text_kind))
        except Exception:  # one broken block must not hide its siblings
            events.append(Event("unknown", type(block).__name__, raw=message))
    return events


def _assistant(message: Any) -> list[Event]:
    base = _thread(message)
    base["context"] = context_of(getattr(message, "usage", None))
    content = getattr(message, "content", None)
    blocks = _blocks(content)
    if _is_synthetic(message, blocks):
        return [_synthetic_error(message, blocks, base)]
    return _content_events(message, content, base, "text")


def _is_synthetic(message: Any, blocks: list[Any] | tuple[Any, ...]) -> bool:
    if getattr(message, "model", None) == SYNTHETIC_MODEL:
        return True
    # Belt and braces: an errored message whose only words are the CLI's "API Error: ..." is not model speech.
    if getattr(message, "error", None):
        texts = [getattr(b, "text", None) for b in blocks]
        return bool(texts) and all(isinstance(t, str) and t.startswith("API Error") for t in texts)
    return False


def _synthetic_error(message: Any, blocks: list[Any] | tuple[Any, ...], base: dict[str, Any]) -> Event:
    text = "\n".join(t for b in blocks if isinstance(t := getattr(b, "text", None), str) and t)
    error = getattr(message, "error", None)
    found = _API_STATUS.search(text)
    payload: dict[str, Any] = {"synthetic": True, **base, **({"error": json_safe(error)} if error else {}),
                               **({"status": int(found.group(1))} if found else {})}
    return Event("error", text, payload=payload, raw=message)


def _user(message: Any) -> list[Event]:
    # No "context" here: a user message carries no usage, and a 0 would read as "the context emptied".
    return _content_events(message, getattr(message, "content", None), _thread(message), "prompt")


def _result(message: Any) -> list[Event]:
    cost = getattr(message, "total_cost_usd", None)
    turns = getattr(message, "num_turns", 0)
    payload: dict[str, Any] = {
        "session_id": json_safe(getattr(message, "session_id", None)),
        "cost_usd": _money(cost),
        "num_turns": turns if type(turns) is int else 0,
        "is_error": getattr(message, "is_error", None) is True,
    }
    for key in ("terminal_reason", "api_error_status", "stop_reason", "errors"):
        v = getattr(message, key, None)
        if v is not None:
            payload[key] = json_safe(v)
    return [Event("result", _text(getattr(message, "subtype", "")), payload=payload, raw=message)]


def _system(message: Any) -> list[Event]:
    subtype = _text(getattr(message, "subtype", ""))
    data = getattr(message, "data", None)
    data = data if isinstance(data, dict) else {}
    if subtype in ("compact_boundary", "microcompact_boundary"):
        return [_compact(message, subtype, data)]
    if subtype == "status" and data.get("status") == "requesting":
        # Sent by the CLI only with partial messages on, as each model request starts: part of the stream,
        # so it is a partial event too (no words yet), and a consumer that does not stream sees what it did.
        return [Event(PARTIAL, "", payload={**_thread(message), "index": 0, "requesting": True}, raw=message)]
    payload = {**json_safe(data), "subtype": subtype}
    return [Event("system", subtype, payload=payload, raw=message)]


def _compact(message: Any, subtype: str, data: dict[str, Any]) -> Event:
    meta: Any = {}
    for key in ("compact_metadata", "microcompact_metadata", "compactMetadata", "microcompactMetadata"):
        if isinstance(data.get(key), dict):
            meta = data[key]
            break

    def pick(*keys: str) -> Any:
        for k in keys:
            if meta.get(k) is not None:
                return json_safe(meta[k])
        return None

    trigger = pick("trigger")
    pre, post = pick("pre_tokens", "preTokens"), pick("post_tokens", "postTokens")
    micro = subtype.startswith("micro") or (isinstance(trigger, str) and "micro" in trigger)
    text = f"{'microcompact' if micro else 'compact'} boundary" + (f" ({trigger})" if trigger else "")
    if pre is not None:
        text += f": {pre} → {post if post is not None else '?'} tokens"
    payload = {"trigger": trigger, "pre_tokens": pre, "post_tokens": post, "micro": micro, "subtype": subtype}
    return Event("reset", text, payload=payload, raw=message)


def _conversation_reset(message: Any) -> list[Event]:
    payload = {"trigger": None, "pre_tokens": None, "post_tokens": None, "micro": False,
               "subtype": "conversation_reset",
               "new_conversation_id": json_safe(getattr(message, "new_conversation_id", None)),
               "session_id": json_safe(getattr(message, "session_id", None))}
    return [Event("reset", "conversation reset", payload=payload, raw=message)]


def _task(message: Any) -> list[Event]:
    name = type(message).__name__
    payload: dict[str, Any] = {"kind": name, "subtype": json_safe(getattr(message, "subtype", None))}
    for key in _TASK_FIELDS:
        v = getattr(message, key, None)
        if v is not None:
            payload[key] = json_safe(v)
    return [Event("task", name, payload=payload, raw=message)]


def _stream(message: Any) -> list[Event]:
    """A raw stream event (partial messages on): a text delta becomes one "partial" event, tagged like the
    text it belongs to, with the content block's ``index``. Any other frame (message and block starts and
    stops, thinking, a tool call's input as it forms, pings) is "unknown", like every shape normalize does
    not read; the Runtime passes none of those on, since the complete message that follows says it all."""
    event = getattr(message, "event", None)
    delta = event.get("delta") if isinstance(event, dict) and event.get("type") == "content_block_delta" else None
    text = delta.get("text") if isinstance(delta, dict) and delta.get("type") == "text_delta" else None
    if not isinstance(text, str) or not text:
        return [Event("unknown", type(message).__name__, raw=message)]
    index = event.get("index") if isinstance(event, dict) else None
    payload = {**_thread(message), "index": index if type(index) is int else 0}
    return [Event(PARTIAL, str.__str__(text), payload=payload, raw=message)]


_HANDLERS: dict[type, Callable[[Any], list[Event]]] = {
    StreamEvent: _stream,
    AssistantMessage: _assistant,
    UserMessage: _user,
    ResultMessage: _result,
    TaskStartedMessage: _task,
    TaskProgressMessage: _task,
    TaskUpdatedMessage: _task,
    TaskNotificationMessage: _task,
    SystemMessage: _system,
    ConversationResetMessage: _conversation_reset,
}


def _handler_for(cls: type) -> Callable[[Any], list[Event]] | None:
    handler = _HANDLERS.get(cls)
    if handler is None:
        # Subclasses resolve to their nearest known base (task classes are SystemMessage subclasses: listed first).
        handler = next((h for base, h in _HANDLERS.items() if issubclass(cls, base)), None)
    return handler


def normalize(message: Any) -> list[Event]:
    """Flatten one SDK message into 0..N Events. Never raises; payloads are always JSON-safe."""
    cls = type(message)
    try:
        handler = _handler_for(cls)
        if handler is not None:
            return handler(message)
    except Exception:
        pass
    return [Event("unknown", cls.__name__, raw=message)]


def _money(value: Any) -> float:
    if type(value) is int or (type(value) is float and math.isfinite(value)):
        return float(value)
    return 0.0
