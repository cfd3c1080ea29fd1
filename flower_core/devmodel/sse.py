"""Encode one scripted turn as the Messages API's server-sent events."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from .scenario import Turn

DEFAULT_USAGE = {
    "input_tokens": 100,
    "output_tokens": 20,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 0,
}


def frame(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def tool_use_id() -> str:
    return "toolu_" + uuid.uuid4().hex[:24]


def turn_events(turn: Turn, model: str, text: str, ids: Sequence[str] = ()) -> Iterator[bytes]:
    """Yield the SSE frames of a reply made of thinking, text, then tool_use blocks.

    `ids` are the tool_use ids to serve, one per call (a call's own id, else a fresh one, when missing).
    """
    usage = {**DEFAULT_USAGE, **turn.usage}
    message: dict[str, Any] = {
        "id": "msg_" + uuid.uuid4().hex[:24], "type": "message", "role": "assistant",
        "model": model, "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {k: v for k, v in usage.items() if k != "output_tokens"} | {"output_tokens": 1},
    }
    yield frame("message_start", {"type": "message_start", "message": message})
    index = 0
    if turn.think:
        yield frame("content_block_start", {"type": "content_block_start", "index": index,
                                            "content_block": {"type": "thinking", "thinking": "", "signature": ""}})
        yield frame("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": "thinking_delta", "thinking": turn.think}})
        yield frame("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": "signature_delta", "signature": "devmodel"}})
        yield frame("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    if text:
        yield frame("content_block_start", {"type": "content_block_start", "index": index,
                                            "content_block": {"type": "text", "text": ""}})
        # Two deltas so clients see real streaming, not one blob.
        cut = len(text) // 2
        for part in (text[:cut], text[cut:]):
            if part:
                yield frame("content_block_delta", {"type": "content_block_delta", "index": index,
                                                    "delta": {"type": "text_delta", "text": part}})
        yield frame("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    for i, call in enumerate(turn.calls):
        block = {"type": "tool_use", "id": ids[i] if i < len(ids) else call.id or tool_use_id(), "name": call.tool,
                 "input": {}}
        yield frame("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})
        yield frame("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": "input_json_delta",
                                                      "partial_json": json.dumps(call.input, ensure_ascii=False)}})
        yield frame("content_block_stop", {"type": "content_block_stop", "index": index})
        index += 1
    stop = turn.stop_reason or ("tool_use" if turn.calls else "end_turn")
    yield frame("message_delta", {"type": "message_delta",
                                  "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": usage["output_tokens"]}})
    yield frame("message_stop", {"type": "message_stop"})


def error_body(status: int, message: str) -> dict[str, Any]:
    kinds = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error",
             500: "api_error", 529: "overloaded_error"}
    default = {529: "Overloaded", 500: "Internal server error", 429: "Rate limited"}
    return {"type": "error", "error": {"type": kinds.get(status, "api_error"),
                                       "message": message or default.get(status, "error")}}
