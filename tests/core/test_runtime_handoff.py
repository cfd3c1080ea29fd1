"""Handoff through the real CLI: a session near its window writes a document and a fresh one takes over."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flower_core.runtime import HandoffPolicy
from flower_core.runtime.handoff import calibrated_window
from tests.conftest import scenario_of
from tests.support.runtime_support import count_words, make_runtime, spec

DOC = """## Goal
Count the words in data/.
## Done
a.txt counted: 120 words.
## In progress
Counting b.txt.
## Decisions
Words are split on whitespace.
## Next steps
Finish b.txt, then report the total.
## Open questions
None."""

def tenths(window: int = 10_000) -> HandoffPolicy:
    """The bridge's fractions (near 70 %, trigger 80 %) on a small window: the original's thresholds keep
    50k of room and a 10k floor, so a 10k window would never be reached."""
    return HandoffPolicy(window=window, near=0.70, trigger=0.80)


SUCCESSOR = {"name": "successor", "match": "taking over this task",
             "turn": [{"say": "Successor continues.", "usage": {"input_tokens": 1200}}]}


def working(then: dict[str, Any]) -> dict[str, Any]:
    """Two tool turns that raise the context past near (7,000) then past the trigger (8,000) of a
    10,000 window, then what the writing round gets. The stop lands either while Read runs (the CLI
    then records an interrupted assistant entry: the writing request is turn 3) or while turn 2 is in
    flight (turn 2 is requested again): ``then`` answers both."""
    read = [{"tool": "Read", "input": {"file_path": "data.txt"}}]
    return {"name": "main", "turn": [
        {"say": "Step one.", "call": read, "usage": {"input_tokens": 6500, "cache_read_input_tokens": 1000}},
        {"say": "Step two.", "call": read, "usage": {"input_tokens": 8500}},
        then, then,
    ]}


async def test_handoff_writes_a_document_and_a_fresh_session_takes_over(double_factory: Any, cli_home: Path,
                                                                       tmp_path: Path) -> None:
    md = await double_factory(scenario_of(SUCCESSOR, working({"say": DOC, "delay_s": 1.0})))
    bench = SimpleNamespace(notes=tmp_path / "bench" / "notes")
    rt = make_runtime(tmp_path, md, cli_home, handoff=tenths(), workbench=bench)
    r, rec = await count_words(rt, step_name="count")
    assert rec.phases() == ["near", "writing", "done"]
    near, _, done = rec.kinds("handoff")
    assert near.payload == {"phase": "near", "step": "count", "context": 7500, "window": 10_000, "at": 8000}
    assert done.payload["degraded"] is False and done.payload["context"] == 8500 and done.payload["window"] == 10_000
    assert {"doing", "next", "decided"} <= set(done.payload["sections"])
    path = Path(done.payload["path"])
    assert path == bench.notes / "交接-count.md" and "Counting b.txt." in path.read_text()
    assert r.ok and r.attempts == 1 and len(r.retired) == 1 and r.session_id not in r.retired
    assert r.session_id == rec.kinds("system")[-1].payload["session_id"]
    assert r.text == "Step one.\n\nStep two.\n\nSuccessor continues."  # the document is not step prose
    assert r.context == 1200 and not r.errors
    first = md.model_requests("successor")[0]
    assert first.turn == 0 and "Finish b.txt, then report the total." in first.first_user_text
    assert "Count the words in data/." in first.first_user_text


async def test_a_failed_writing_round_hands_off_with_a_degraded_document(double_factory: Any, cli_home: Path,
                                                                        tmp_path: Path) -> None:
    fault = {"say": "never", "fault": {"kind": "http", "status": 529, "persistent": True}}
    md = await double_factory(scenario_of(SUCCESSOR, working(fault)))
    rt = make_runtime(tmp_path, md, cli_home, handoff=tenths())  # no workbench: the document lives in the prompt
    r, rec = await count_words(rt)
    assert rec.phases() == ["near", "writing", "done"]
    done = rec.kinds("handoff")[-1].payload
    assert done["degraded"] is True and done["path"] is None
    assert r.ok and len(r.retired) == 1 and any("handoff degraded" in e for e in r.errors)
    brief = md.model_requests("successor")[0].first_user_text
    assert "[degraded" in brief and "Count the words in data/." in brief and "Step two." in brief
    assert "[Read] data.txt" in brief


async def test_an_overflow_takes_the_handoff_path(double_factory: Any, cli_home: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # the level it learns stays in this test
    md = await double_factory(scenario_of(SUCCESSOR, {"name": "main", "turn": [
        {"say": "Working.", "call": [{"tool": "Read", "input": {"file_path": "data.txt"}}]},
        {"say": "never", "fault": {"kind": "overflow", "persistent": True}},
    ]}))
    rt = make_runtime(tmp_path, md, cli_home)  # default window (1M): the threshold is never reached
    r, rec = await count_words(rt)
    assert rec.phases() == ["writing", "done"] and rec.kinds("handoff")[-1].payload["degraded"] is True
    assert r.ok and r.attempts == 1 and len(r.retired) == 1 and r.text.endswith("Successor continues.")
    # No writing round: an overflowing session cannot take one more turn.
    assert [q.served for q in md.model_requests("main")] == ["turn", "fault:overflow"]
    writing = rec.kinds("handoff")[0].payload
    assert writing["window"] == 1_000_000 and writing["overflow"] is True
    assert calibrated_window(None, md.env(cli_home)) == writing["context"] > 0  # what the next guess starts from


async def test_the_generation_brake_stops_an_endless_handoff(double_factory: Any, cli_home: Path,
                                                             tmp_path: Path) -> None:
    # The successor starts above the trigger: every new session would hand off again at once.
    greedy = {"name": "successor", "match": "taking over this task", "turn": [
        {"say": "Big start.", "call": [{"tool": "Read", "input": {"file_path": "data.txt"}}],
         "usage": {"input_tokens": 9000}},
        {"say": DOC, "delay_s": 1.0}]}
    md = await double_factory(scenario_of(greedy, working({"say": DOC, "delay_s": 1.0})))
    rt = make_runtime(tmp_path, md, cli_home, handoff=tenths(), max_generations=1)
    (rt.workspace / "data.txt").write_text("some words")
    try:
        r = await rt.run(spec(), "Count the words in data/.")
    finally:
        rt.close()
    assert not r.ok and r.error and r.error.startswith("handoff brake") and "window" in r.error
    assert len(r.retired) == 1 and r.session_id not in r.retired


async def test_a_second_degraded_handoff_in_a_row_stops_the_step(double_factory: Any, cli_home: Path,
                                                                 tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """As the original: handing off again on an assembled document after one already was only burns money."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    overflow = {"say": "never", "fault": {"kind": "overflow", "persistent": True}}
    successor = {"name": "successor", "match": "taking over this task", "turn": [overflow]}
    md = await double_factory(scenario_of(successor, {"name": "main", "turn": [
        {"say": "Working.", "call": [{"tool": "Read", "input": {"file_path": "data.txt"}}]}, overflow]}))
    rt = make_runtime(tmp_path, md, cli_home)
    r, rec = await count_words(rt)
    assert not r.ok and r.error is not None and r.error.startswith("handoff brake: 2 degraded handoffs in a row")
    assert "window=" in r.error and "headroom=" in r.error
    assert len(r.retired) == 2 and rec.phases() == ["writing", "done", "writing", "done"]
    assert [q.served for q in md.model_requests("successor")] == ["fault:overflow"]  # no third session
