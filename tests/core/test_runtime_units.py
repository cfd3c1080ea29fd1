"""Pure parts of the runtime: error classification, backoff, window guess, thresholds, the handoff document."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower_core.runtime import HandoffDoc, HandoffPolicy, Resilience, StepResult, classify, default_window, is_overflow
from flower_core.runtime.document import DEGRADED_MARK, degraded
from flower_core.runtime.handoff import INTERRUPT_NOTE, interrupt_prompt, safe_name, write_handoff


@pytest.mark.parametrize(("text", "status", "kind"), [
    ("API Error: 529 Overloaded. This is a server-side issue", None, "transient"),
    ("API Error: 500 Internal server error", None, "transient"),
    ("API Error: Connection error.", None, "transient"),
    ("Request timed out", None, "transient"),
    ("ECONNRESET while streaming", None, "transient"),
    ("Too many requests", None, "transient"),
    ("API Error: 401 authentication failed (connection closed)", None, "fatal"),
    ("Invalid API key · Please run /login", None, "fatal"),
    ("invalid_request_error: bad field", None, "fatal"),
    ("Prompt is too long", None, "fatal"),
    ("error_max_turns", None, "fatal"),
    ("error_max_budget_usd", None, "fatal"),
    ("something odd happened", None, "unknown"),
    ("", None, "unknown"),
    ("whatever the text", 529, "transient"),
    ("whatever the text", 403, "fatal"),
])
def test_classify(text: str, status: int | None, kind: str) -> None:
    assert classify(text, status=status) == kind


def test_backoff_doubles_and_is_capped() -> None:
    policy = Resilience(base_delay=1.0, max_delay=5.0, jitter=0.0)
    assert [policy.delay_for(n) for n in (1, 2, 3, 4, 5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    jittery = Resilience(base_delay=4.0, jitter=0.25)
    assert all(3.0 <= jittery.delay_for(1) <= 5.0 for _ in range(50))
    assert Resilience(base_delay=0).delay_for(3) == 0.0


def test_retry_decisions() -> None:
    policy = Resilience()
    assert policy.should_retry("transient") and policy.should_retry("unknown")
    assert not policy.should_retry("fatal")
    assert not Resilience(retry_unknown=False).should_retry("unknown")
    assert Resilience.coerce(False).enabled is False
    assert Resilience.coerce(policy) is policy


def test_default_window_reads_the_model_name(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))  # no calibration from a real home
    for var in ("ANTHROPIC_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL", "FLOWER_WINDOW"):
        monkeypatch.delenv(var, raising=False)
    assert default_window() == 1_000_000  # the original's guess: a name that says nothing is a 1M model
    assert default_window("claude-sonnet-4-5") == 1_000_000
    assert default_window("claude-haiku-4-5") == 200_000
    assert default_window("claude-haiku-4-5[1m]") == 1_000_000  # the 1m token is read first
    assert default_window("claude-sonnet-4-5-1m") == 1_000_000
    assert default_window("claude-sonnet-4-5", plain=200_000) == 200_000  # the bridge's guess
    assert default_window("claude-opus-4-6[1m]", plain=200_000) == 1_000_000
    assert default_window("claude-haiku-4-5-21m", plain=200_000) == 200_000  # "1m" inside a longer token
    assert default_window(None, {"ANTHROPIC_MODEL": "claude-haiku-4-5"}) == 200_000
    monkeypatch.setenv("ANTHROPIC_MODEL", "claude-x[1M]")
    assert default_window(plain=200_000) == 1_000_000


def test_policy_thresholds_and_overrides() -> None:
    policy = HandoffPolicy(window=200_000)
    assert (policy.room, policy.at, policy.warn_at) == (50_000, 150_000, 130_000)
    assert policy.window_for("claude-opus-4-6[1m]") == 200_000
    fractions = HandoffPolicy(window=10_000, near=0.7, trigger=0.8)
    assert (fractions.warn_at_for(10_000), fractions.at_for(10_000)) == (7_000, 8_000)
    inverted = HandoffPolicy(near=0.9, trigger=0.5)
    assert inverted.warn_at_for(1000) <= inverted.at_for(1000)
    coerced = HandoffPolicy.coerce(True, window=50_000, max_generations=2)
    assert (coerced.enabled, coerced.window, coerced.max_generations) == (True, 50_000, 2)
    assert HandoffPolicy.coerce(False).enabled is False
    assert HandoffPolicy.coerce(policy) is policy
    assert HandoffPolicy.coerce(policy, window=9).window == 9 and policy.window == 200_000  # a copy


def test_overflow_signal() -> None:
    assert is_overflow("Prompt is too long")
    assert is_overflow(None, "input length and max_tokens exceed context limit")
    assert not is_overflow("API Error: 529 Overloaded", None, "")


WRITTEN = """Here is the handoff.

## Goal
Ship the parser.

**Done:** tokenizer in src/tok.py, tests pass.

## In progress
Wiring the parser into cli.py.

## Dead ends
Regex-only parsing: fails on nesting.

```text
## Goal
a heading inside a code fence is not a section
```

Next steps: run the golden tests, then update the README.
"""


def test_parse_reads_sections_in_any_heading_style() -> None:
    doc = HandoffDoc.parse(WRITTEN, step="work")
    assert doc.goal == "Ship the parser."
    assert doc.done == "tokenizer in src/tok.py, tests pass."
    assert doc.doing == "Wiring the parser into cli.py."
    assert doc.deadends.startswith("Regex-only parsing")
    assert "inside a code fence" in doc.deadends  # fenced text stays body text
    assert doc.next == "run the golden tests, then update the README."
    assert doc.complete() and doc.sections() == ["goal", "done", "doing", "deadends", "next"]
    assert HandoffDoc.parse("## Goal\nonly a goal").missing() == ["doing", "next"]


def test_parse_reads_a_document_wrapped_in_a_fence_and_chinese_headings() -> None:
    doc = HandoffDoc.parse("```markdown\n## 现在在做\n写测试\n## 下一步\n跑测试\n```")
    assert (doc.doing, doc.next) == ("写测试", "跑测试")
    assert HandoffDoc.parse("Now: this is prose, not a heading.\nNext steps: go").doing == ""


def test_markdown_and_prompt_block() -> None:
    doc = HandoffDoc.parse(WRITTEN, step="work")
    doc.task = "Write a parser for the config language."
    md = doc.to_markdown(meta="context 8,500/10,000")
    assert md.startswith("# Handoff — work") and "## Decisions\n(empty)" in md
    block = doc.prompt_block()
    assert "taking over" in block and "Wiring the parser" in block and "Decisions" not in block
    assert "Write a parser for the config language." in block  # the original task always travels along


def test_degraded_document_carries_what_the_runtime_saw() -> None:
    doc = degraded("work", "Count the words in data/.", last_text="Halfway through b.txt",
                   tool_calls=["[Read] a.txt", "[Read] b.txt"], why="writing round failed")
    assert doc.degraded and doc.complete() and doc.doing.startswith(DEGRADED_MARK)
    assert doc.goal == "Count the words in data/." and "[Read] b.txt" in doc.done
    assert "Halfway through b.txt" in doc.doing and "incomplete" in doc.prompt_block()
    assert "writing round failed" in doc.to_markdown()


def test_write_handoff_archives_the_previous_generation(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    first = write_handoff(notes, "work/1", "first")
    assert first.name == "交接-work_1.md" and first.read_text() == "first"
    second = write_handoff(notes, "work/1", "second")
    assert second == first and second.read_text() == "second"
    archived = list((notes / "archive" / "交接").iterdir())
    assert [p.read_text() for p in archived] == ["first"]
    assert safe_name("../..") == "step"


def test_interrupt_prompt_and_step_result() -> None:
    assert interrupt_prompt("use tabs").startswith("use tabs") and INTERRUPT_NOTE in interrupt_prompt("x")
    assert "without a message" in interrupt_prompt("  ")
    r = StepResult(step="s", started_at=10.0, ended_at=12.345)
    r.add_text("one")
    r.add_text("  ")
    r.add_text("two")
    row = r.to_dict()
    assert r.text == "one\n\ntwo" and row["duration_s"] == 2.35 and row["step"] == "s"
    assert StepResult(step="s").duration_s == 0.0
