"""Read what the CLI sent: pure helpers over a Messages API request body."""

from __future__ import annotations

import re
from typing import Any

PLACEHOLDERS = ("last_tool_result", "last_user_text", "first_user_text", "turn", "brief_file", "goal_file")
# The starter's clarifier and goal setter name their file in the system prompt (flower_core/roles.py); the
# file's name follows the run's language, so a scenario writes where the run will read.
_NAMED_FILE = {"brief_file": re.compile(r"The brief file: (\S+)"), "goal_file": re.compile(r"The goal file: (\S+)")}


def _texts(content: Any) -> list[str]:
    """Text pieces of a message's content, tool results included (as their text)."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if not isinstance(content, list):
        return out
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            out.append(str(block.get("text", "")))
    return out


def _messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    msgs = body.get("messages")
    return [m for m in msgs if isinstance(m, dict)] if isinstance(msgs, list) else []


def system_text(body: dict[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    return "\n".join(_texts(system))


def first_user_text(body: dict[str, Any]) -> str:
    for msg in _messages(body):
        if msg.get("role") == "user":
            return "\n".join(_texts(msg.get("content")))
    return ""


def assistant_count(body: dict[str, Any]) -> int:
    return sum(1 for m in _messages(body) if m.get("role") == "assistant")


def _tool_result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(_texts(content))


def tool_results(body: dict[str, Any]) -> list[str]:
    """Text of every tool_result block in the history, oldest first."""
    return [_tool_result_text(block) for msg in _messages(body)
            if msg.get("role") == "user" and isinstance(msg.get("content"), list)
            for block in msg["content"] if isinstance(block, dict) and block.get("type") == "tool_result"]


def last_tool_result(body: dict[str, Any]) -> str:
    """Text of the last tool_result block in the history ("" when none)."""
    results = tool_results(body)
    return results[-1] if results else ""


def last_user_text(body: dict[str, Any]) -> str:
    """Plain text of the last user message that carries text (not only tool results)."""
    for msg in reversed(_messages(body)):
        if msg.get("role") != "user":
            continue
        texts = [t for t in _texts(msg.get("content")) if not t.lstrip().startswith("<system-reminder>")]
        if texts:
            return "\n".join(texts)
    return ""


def _file_named(name: str) -> Any:
    def find(body: dict[str, Any]) -> str:
        found = _NAMED_FILE[name].search(system_text(body))
        return found.group(1) if found else "{" + name + "}"
    return find


def render_input(value: Any, body: dict[str, Any], extra: dict[str, str] | None = None) -> Any:
    """A tool call's input with the placeholders of its strings filled (nested dicts and lists too)."""
    if isinstance(value, str):
        return render(value, body, extra)
    if isinstance(value, dict):
        return {k: render_input(v, body, extra) for k, v in value.items()}
    if isinstance(value, list):
        return [render_input(v, body, extra) for v in value]
    return value


def render(template: str, body: dict[str, Any], extra: dict[str, str] | None = None) -> str:
    """Fill ``{placeholder}`` names from the request (and `extra`'s names); other braces are left alone."""
    if "{" not in template:
        return template
    values: dict[str, Any] = {
        **{name: (lambda b, v=v: v) for name, v in (extra or {}).items()},
        "last_tool_result": last_tool_result,
        "last_user_text": last_user_text,
        "first_user_text": first_user_text,
        "turn": lambda b: str(assistant_count(b)),
        **{name: _file_named(name) for name in _NAMED_FILE},
    }
    out = template
    for name, fn in values.items():
        token = "{" + name + "}"
        if token in out:
            out = out.replace(token, fn(body))
    return out
