"""The terminal prints the agent's words as they arrive, and ends with what it printed without streaming."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from adapters.terminal import Render
from flower_core import Event
from tests.conftest import scenario_of
from tests.support.runtime_support import make_runtime, spec

WORDS = " ".join(f"word{i}" for i in range(30)) + "."


class Tape(io.StringIO):
    """A stream that remembers what each write added."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[str] = []

    def write(self, s: str) -> int:
        self.writes.append(s)
        return super().write(s)


def partial(text: str, sub: bool = False) -> Event:
    return Event("partial", text, payload={"subagent": sub, "index": 0})


def test_words_print_as_they_come_and_the_text_adds_only_the_rest() -> None:
    tape = Tape()
    r = Render(tape, color=False)
    for ev in (partial("Hel"), partial("lo "), partial("worker", sub=True), partial(""),
               Event("text", "Hello there", payload={"subagent": False}),
               Event("tool_call", "ls", tool="Bash", payload={"id": "t1"}),
               partial("Cut sh"), Event("result", "success", payload={"num_turns": 1, "cost_usd": 0.0})):
        r(ev)
    assert tape.writes[:2] == ["Hel", "lo "]
    assert tape.getvalue() == "Hello there\n  [Bash] ls\nCut sh\n  - success · 1 turns · $0.0000\n"
    r.say("a notice")  # the input thread's lines never land in the middle of words
    assert tape.getvalue().endswith("$0.0000\na notice\n")


async def test_through_the_real_cli_the_terminal_shows_what_it_showed_before_streaming(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Reading.", "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}]},
        {"say": WORDS, "stream": {"words": 3, "pause_s": 0.02}}]}))
    shown = []
    for streaming in (False, True):
        tape = Tape()
        rt = make_runtime(tmp_path / str(streaming), md, cli_home, partial_text=streaming)
        (rt.workspace / "notes.md").write_text("hi")
        try:
            await rt.run(spec(), "read", on_event=Render(tape, color=False))
        finally:
            rt.close()
        shown.append(tape)
    plain, streamed = shown
    cost = [line for line in plain.getvalue().splitlines() if "$" not in line]
    assert [line for line in streamed.getvalue().splitlines() if "$" not in line] == cost
    assert len([w for w in streamed.writes if "word" in w]) >= 10  # the words came in pieces
