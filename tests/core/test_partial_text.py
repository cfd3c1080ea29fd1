"""Partial text: the model's words as "partial" events, through the real SDK + CLI against a streaming double."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import SystemMessage
from claude_agent_sdk.types import StreamEvent

from flower_core.devmodel import ScenarioError, parse_scenario
from flower_core.devmodel.sse import text_pieces
from flower_core.events import EVENT_KINDS, PARTIAL, Event, is_partial, normalize
from flower_core.payloads import PartialPayload
from tests.conftest import scenario_of
from tests.support.runtime_support import make_runtime, spec

WORDS = " ".join(f"word{i}" for i in range(40)) + "."


def _delta(text: str, index: int = 0, parent: str | None = None) -> StreamEvent:
    return StreamEvent(uuid="u", session_id="s", parent_tool_use_id=parent, event={
        "type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": text}})


def test_a_text_delta_is_one_partial_event_and_the_rest_of_the_stream_unknown() -> None:
    (ev,) = normalize(_delta("Hel", 1))
    assert (ev.kind, ev.text, ev.payload) == ("partial", "Hel", {"subagent": False, "index": 1})
    assert is_partial(ev) and PARTIAL not in EVENT_KINDS and len(EVENT_KINDS) == 15
    (sub,) = normalize(_delta("x", parent="toolu_1"))
    got = PartialPayload.of(sub)
    assert (got.subagent, got.parent_tool_use_id, got.index) == (True, "toolu_1", 0)
    for event in ({"type": "message_start", "message": {}}, {"type": "content_block_stop", "index": 0},
                  {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "h"}},
                  {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta",
                                                                        "partial_json": "{"}},
                  {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": ""}},
                  "not a dict"):
        (ev,) = normalize(StreamEvent(uuid="u", session_id="s", event=event))  # type: ignore[arg-type]
        assert (ev.kind, ev.text) == ("unknown", "StreamEvent")  # as before; the Runtime passes them not on
    # The CLI's "requesting" status comes only with partial messages on: a partial event without words.
    (req,) = normalize(SystemMessage(subtype="status", data={"status": "requesting", "session_id": "s"}))
    assert is_partial(req) and req.text == "" and PartialPayload.of(req).requesting
    (other,) = normalize(SystemMessage(subtype="status", data={"status": "compacting"}))
    assert other.kind == "system"


def test_the_double_cuts_a_streamed_text_into_word_pieces_that_join_back() -> None:
    for text in ("", "one", " lead  and\ttabs\nnew line ", WORDS):
        for words in (1, 3):
            assert "".join(text_pieces(text, words)) == text
    assert text_pieces("a b c d", 2) == ["a b ", "c d"]
    sc = parse_scenario({"stream": {"pause_s": 0.01}, "conversation": [{"turn": [
        {"say": "x"}, {"say": "y", "stream": {"words": 4}}, {"say": "z", "stream": False}]}]})
    turns = sc.conversations[0].turns
    assert [(t.stream.words, t.stream.pause_s) if t.stream else None for t in turns] == [
        (1, 0.01), (4, 0.025), None]
    for bad in ({"words": 0}, {"pause_s": -1}, {"speed": 2}, "fast"):
        with pytest.raises(ScenarioError):
            parse_scenario({"conversation": [{"turn": [{"say": "x", "stream": bad}]}]})


async def test_words_arrive_as_written_and_the_complete_text_stays_as_it_was(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Reading.", "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}]},
        {"say": WORDS, "stream": {"words": 2, "pause_s": 0.02}},
    ]}))
    results, seen = [], []
    for partial_text in (False, True):
        rt = make_runtime(tmp_path / str(partial_text), md, cli_home, partial_text=partial_text)
        (rt.workspace / "notes.md").write_text("hello")
        seen.append([])
        try:
            results.append(await rt.run(spec(), "read notes.md", on_event=lambda ev: seen[-1].append(
                (time.monotonic(), ev))))
        finally:
            rt.close()
    plain, streamed = results
    assert plain.ok and streamed.ok and plain.text == streamed.text == f"Reading.\n\n{WORDS}"
    assert not any(is_partial(ev) for _, ev in seen[0]) and not any(ev.kind == "unknown" for _, ev in seen[1])
    # Without the partial events, the streamed run's events are the plain run's, kind for kind.
    assert [(ev.kind, ev.text) for _, ev in seen[1] if not is_partial(ev)] == [
        (ev.kind, ev.text) for _, ev in seen[0]]
    assert sum(PartialPayload.of(ev).requesting for _, ev in seen[1]) == 2  # one per model request

    events = [ev for _, ev in seen[1]]
    final = next(i for i, ev in enumerate(events) if ev.kind == "text" and ev.text == WORDS)
    mine = [(t, ev) for t, ev in seen[1][:final] if is_partial(ev) and "word" in ev.text]
    assert "".join(ev.text for _, ev in mine) == WORDS  # every delta, in order, before the complete text
    assert len(mine) == 20 and all(not PartialPayload.of(ev).subagent for _, ev in mine)
    assert mine[-1][0] - mine[0][0] > 0.2  # spread out as the double paused: seen while being written
    first = next(i for i, ev in enumerate(events) if ev.kind == "text" and ev.text == "Reading.")
    assert "".join(ev.text for ev in events[:first] if is_partial(ev)) == "Reading."


async def test_subagent_words_stream_tagged_and_stay_out_of_the_step_text(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of(
        {"name": "worker", "match": "count the files", "turn": [{"say": "There are 3 files.", "stream": True}]},
        {"name": "main", "turn": [
            {"say": "Delegating.", "call": [{"tool": "Agent", "id": "toolu_sub1", "input": {
                "description": "count", "prompt": "Please count the files", "subagent_type": "general-purpose",
                "run_in_background": False}}]},
            {"say": "The worker is done.", "stream": True},
        ]}))
    rt = make_runtime(tmp_path, md, cli_home, partial_text=True)
    got: list[Event] = []
    try:
        r = await rt.run(spec(allowed_tools=["Read", "Agent"]), "do it", on_event=got.append)
    finally:
        rt.close()
    assert r.ok and r.text == "Delegating.\n\nThe worker is done."
    main = "".join(ev.text for ev in got if is_partial(ev) and not PartialPayload.of(ev).subagent)
    assert main == "Delegating.The worker is done."
    # Whatever of the subagent's words this CLI streams is tagged with its parent call.
    sub = [ev for ev in got if is_partial(ev) and PartialPayload.of(ev).subagent]
    assert all(PartialPayload.of(ev).parent_tool_use_id == "toolu_sub1" for ev in sub)
    assert "".join(ev.text for ev in sub) in ("", "There are 3 files.")
