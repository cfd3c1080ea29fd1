"""Encode one scripted turn as the Messages API's server-sent events."""

from __future__ import annotations

import json
import re
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


def text_pieces(text: str, words: int) -> list[str]:
    """``text`` cut after every ``words`` words (each word keeps the spaces after it): joined, the text again."""
    cuts = re.split(r"(?<=\s)(?=\S)", text)
    return ["".join(cuts[i:i + words]) for i in range(0, len(cuts), words)]


def turn_events(turn: Turn, model: str, text: str, ids: Sequence[str] = ()) -> Iterator[bytes]:
    """The SSE frames of ``turn_frames`` without its pauses."""
    return (f for f in turn_frames(turn, model, text, ids) if isinstance(f, bytes))


def turn_frames(turn: Turn, model: str, text: str, ids: Sequence[str] = ()) -> Iterator[bytes | float]:
    """Yield the SSE frames of a reply made of thinking, text, then tool_use blocks; a float between frames
    is a pause (seconds) the server sleeps there (a streamed turn's, between its text deltas).

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
        # Two deltas so clients see real streaming, not one blob; a streamed turn's, a few words each, spaced.
        cut = len(text) // 2
        stream = turn.stream
        parts = text_pieces(text, stream.words) if stream is not None else [text[:cut], text[cut:]]
        for n, part in enumerate(parts):
            if part:
                if n and stream is not None and stream.pause_s > 0:
                    yield stream.pause_s
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
