"""The original flower's handoff policy and window on flower_core (issue 24, last gaps).

    HandoffPolicy    headroom (0 = a quarter of the window, at least 50k), at = max(10k, window - room),
                     warn_at = max(1k, at - 20k), 8 generations; our fractions only when asked for
    default_window   FLOWER_WINDOW > what an overflow taught > the name (haiku 200k, the rest 1M)
    calibration      an overflow records its level in $XDG_CONFIG_HOME/flower/.windows (base url + model,
                     the smallest kept); the next guess on that route hands off at its threshold

The round trip runs through the model double with the real SDK and CLI: an overflow hands off degraded
and records the level; the next step on the same route guesses that window and writes a real handoff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flower_core import HandoffPolicy, Runtime, default_window
from flower_core.runtime import is_overflow
from flower_core.runtime.handoff import (
    calibrated_window,
    calibration_key,
    calibration_path,
    remember_overflow,
)
from tests.conftest import scenario_of
from tests.support.runtime_support import Recorder, count_words, make_runtime, spec

ROUTE = {"ANTHROPIC_BASE_URL": "https://gw.example/v1", "ANTHROPIC_MODEL": "claude-opus-5[1m]"}
READ = [{"tool": "Read", "input": {"file_path": "data.txt"}}]
DOC = """## Goal
Count the words in data/.
## In progress
Counting b.txt.
## Next steps
Finish b.txt, then report the total."""
SUCCESSOR = {"name": "successor", "match": "taking over this task",
             "turn": [{"say": "Successor continues.", "usage": {"input_tokens": 1200}}]}


@pytest.fixture
def config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A config dir of this test's own (the calibration file lives there) and no window settings."""
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    for var in ("FLOWER_WINDOW", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL",
                "ANTHROPIC_DEFAULT_SONNET_MODEL"):
        monkeypatch.delenv(var, raising=False)
    return home


def test_the_policy_has_the_originals_fields_defaults_and_thresholds(config: Path) -> None:
    p = HandoffPolicy()
    assert (p.enabled, p.window, p.headroom, p.max_generations) == (True, None, 0, 8)
    assert (HandoffPolicy.HEADROOM_FRACTION, HandoffPolicy.HEADROOM_FLOOR) == (0.25, 50_000)
    for window, room, at, warn in ((200_000, 50_000, 150_000, 130_000), (1_000_000, 250_000, 750_000, 730_000),
                                   (40_000, 50_000, 10_000, 1_000)):
        policy = HandoffPolicy(window=window)
        assert (policy.room, policy.at, policy.warn_at) == (room, at, warn), window
    assert HandoffPolicy(window=1_000_000, headroom=50_000).at == 950_000  # an explicit headroom is kept
    assert HandoffPolicy(window=40_000, headroom=25_000).at == 15_000
    assert HandoffPolicy(True, 200_000, 30_000, 3).at == 170_000  # the original's positional order
    assert p.window_for() == 1_000_000 and p.at == 750_000  # no window: the guess, read when asked
    # Ours, only when asked for: fractions of the window replace the two lines.
    fractions = HandoffPolicy(window=200_000, near=0.70, trigger=0.80)
    assert (fractions.warn_at, fractions.at) == (140_000, 160_000)


def test_runtime_window_and_max_generations_override_the_policy(config: Path, tmp_path: Path) -> None:
    given = HandoffPolicy(headroom=20_000)
    rt = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs", handoff=given, window=100_000,
                 max_generations=2)
    try:
        assert (rt.handoff.window, rt.handoff.headroom, rt.handoff.max_generations, rt.handoff.at) == (
            100_000, 20_000, 2, 80_000)
        assert given.window is None and given.max_generations == 8  # the caller's policy is left as it was
    finally:
        rt.close()
    plain = Runtime(workspace=tmp_path / "ws", run_dir=tmp_path / "runs2", window=300_000)
    try:
        assert (plain.handoff.window, plain.handoff.at) == (300_000, 225_000)  # as HandoffPolicy(window=300_000)
    finally:
        plain.close()


def test_the_window_guess_is_the_originals(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, window in (("claude-opus-5[1m]", 1_000_000), ("claude-sonnet-5-1m", 1_000_000),
                         ("claude-opus-5", 1_000_000), ("claude-sonnet-5", 1_000_000),
                         ("claude-haiku-4-5-20251001", 200_000), ("claude-haiku-4-5[1m]", 1_000_000), ("", 1_000_000)):
        monkeypatch.setenv("ANTHROPIC_MODEL", name)
        assert default_window() == window, name
    monkeypatch.setenv("ANTHROPIC_MODEL", "")
    monkeypatch.setenv("ANTHROPIC_DEFAULT_OPUS_MODEL", "claude-haiku-4-5-20251001")
    assert default_window() == 200_000
    assert HandoffPolicy(plain_window=200_000).window_for("claude-opus-5") == 200_000  # the bridge's guess


def test_an_overflow_level_is_kept_per_route_and_the_smallest_wins(config: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    other = {**ROUTE, "ANTHROPIC_BASE_URL": "https://other.example"}
    assert calibration_path(ROUTE) == config / "flower" / ".windows"
    assert calibrated_window(None, ROUTE) is None and default_window(None, ROUTE) == 1_000_000
    remember_overflow(174_000, None, ROUTE)
    assert calibrated_window(None, ROUTE) == default_window(None, ROUTE) == 174_000
    remember_overflow(160_000, None, ROUTE)
    remember_overflow(999_000, None, ROUTE)
    assert calibrated_window(None, ROUTE) == 160_000  # a larger overflow does not widen it
    assert json.loads((config / "flower" / ".windows").read_text()) == {
        "https://gw.example/v1|claude-opus-5[1m]": 160_000}
    assert calibration_key(None, ROUTE) == "https://gw.example/v1|claude-opus-5[1m]"
    assert calibrated_window("claude-opus-5", ROUTE) is None  # another model learns afresh
    assert calibrated_window(None, other) is None  # and so does another gateway
    assert default_window(None, {**ROUTE, "FLOWER_WINDOW": "500000"}) == 500_000  # the setting wins
    assert HandoffPolicy(window=333_000).window_for(None, ROUTE) == 333_000  # and an explicit window over both
    assert HandoffPolicy(calibrate=False).window_for(None, ROUTE) == 1_000_000  # the bridge does not read it
    HandoffPolicy(calibrate=False).remember(1_000, None, other)
    assert calibrated_window(None, other) is None  # nor record it
    (config / "flower" / ".windows").write_text("not json")
    assert calibrated_window(None, ROUTE) is None and default_window(None, ROUTE) == 1_000_000


def test_the_overflow_signal_reads_the_originals_phrasings() -> None:
    assert is_overflow("prompt is too long: 1049000 tokens > 1000000 maximum")
    assert is_overflow("API Error: context_length_exceeded")
    assert is_overflow("input length and `max_tokens` exceed context limit")
    assert is_overflow(None, "the request exceeds the context window")
    assert not is_overflow("Connection reset by peer", None)


async def test_an_overflow_teaches_the_next_step_its_window(double_factory: Any, cli_home: Path, tmp_path: Path,
                                                            config: Path) -> None:
    """Step one overflows at 150k on a route guessed at 1M: a degraded handoff, and the level is recorded.
    Step two on the same route guesses 150k (room 50k: near at 80k, handoff at 100k) and hands off at
    its threshold with a document the session wrote itself."""
    md = await double_factory(scenario_of(SUCCESSOR, {"name": "first", "match": "First task", "turn": [
        {"say": "Reading a lot.", "call": READ, "usage": {"input_tokens": 150_000}},
        {"say": "never", "fault": {"kind": "overflow", "persistent": True}},
    ]}, {"name": "second", "match": "Second task", "turn": [
        {"say": "Step one.", "call": READ, "usage": {"input_tokens": 85_000}},
        {"say": "Step two.", "call": READ, "usage": {"input_tokens": 105_000}},
        {"say": DOC, "delay_s": 1.0}, {"say": DOC, "delay_s": 1.0},
    ]}))
    rt = make_runtime(tmp_path, md, cli_home)
    (rt.workspace / "data.txt").write_text("some words")
    first, second = Recorder(), Recorder()
    try:
        one = await rt.run(spec(), "First task: count the words.", step_name="one", on_event=first)
        learned = calibrated_window(None, md.env(cli_home))
        two = await rt.run(spec(), "Second task: count them again.", step_name="two", on_event=second)
    finally:
        rt.close()
    writing, done = first.kinds("handoff")
    assert first.phases() == ["writing", "done"] and writing.payload["window"] == 1_000_000
    assert done.payload["degraded"] is True and one.ok and len(one.retired) == 1
    assert learned == 150_000 and calibration_path().is_file()
    assert [q.served for q in md.model_requests("first")] == ["turn", "fault:overflow"]
    assert second.phases() == ["near", "writing", "done"]
    near, _, done_two = second.kinds("handoff")
    assert near.payload == {"phase": "near", "step": "two", "context": 85_000, "window": 150_000, "at": 100_000}
    assert done_two.payload["degraded"] is False and done_two.payload["context"] == 105_000
    assert two.ok and len(two.retired) == 1 and not two.errors


async def test_the_bridge_policy_neither_records_nor_reads_a_level(double_factory: Any, cli_home: Path,
                                                                   tmp_path: Path, config: Path) -> None:
    md = await double_factory(scenario_of(SUCCESSOR, {"name": "main", "turn": [
        {"say": "Working.", "call": READ, "usage": {"input_tokens": 50_000}},
        {"say": "never", "fault": {"kind": "overflow", "persistent": True}},
    ]}))
    bridge = HandoffPolicy(near=0.70, trigger=0.80, max_generations=5, plain_window=200_000, calibrate=False)
    rt = make_runtime(tmp_path, md, cli_home, handoff=bridge)
    r, rec = await count_words(rt, "Count the words.")
    assert r.ok and len(r.retired) == 1 and rec.kinds("handoff")[0].payload["window"] == 200_000
    assert not calibration_path().exists()
