"""A run's model and effort, through the real SDK + bundled CLI against the model double: chosen at the
start, changed while a question waits (the CLI's next request carries the new model), and a model the
endpoint refuses taken back, the run going on with the one it had."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from flower_core.events import Event
from flower_core.human import HumanChannel
from flower_core.payloads import RetryPayload
from flower_core.runtime import ModelRefused
from flower_core.runtime.steering import Steering
from tests.conftest import scenario_of
from tests.support.runtime_support import Recorder, make_runtime, spec

ASK = "mcp__human__ask"
OPUS, SONNET = "claude-opus-4-6", "claude-sonnet-4-6"  # names the bundled CLI sends as they are


def asking(**kw: Any) -> Any:
    return scenario_of({"name": "main", "turn": [
        {"say": "Asking.", "call": [{"tool": ASK, "input": {"question": "Which colour?"}}]},
        {"say": "The human said: {last_tool_result}"},
    ]}, **kw)


def effort_of(body: dict[str, Any]) -> str | None:
    config = body.get("output_config")
    return config.get("effort") if isinstance(config, dict) else None


def main_requests(md: Any) -> list[Any]:
    return [r for r in md.model_requests() if r.body.get("tools")]  # not the CLI's own side requests


def answer_when_asked(ch: HumanChannel, first: Callable[[], Awaitable[Any]] | None = None) -> Callable[[Event], None]:
    """When the question is asked: `first` (a change of model, awaited), then the answer "blue"."""
    tasks: list[asyncio.Task[None]] = []

    async def go() -> None:
        if first is not None:
            with contextlib.suppress(ModelRefused):
                await first()
        ch.answer(ch.pending()[0].id, "blue")

    def react(ev: Event) -> None:
        if ev.kind == "ask" and ev.payload.get("state") == "asked":
            tasks.append(asyncio.ensure_future(go()))
    return react


async def test_the_chosen_model_and_effort_reach_every_request(double_factory: Any, cli_home: Path,
                                                               tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "Done."}]}))
    rt = make_runtime(tmp_path, md, cli_home, model=OPUS, effort="low")
    try:
        result = await rt.run(spec(), "go")
    finally:
        rt.close()
    assert result.ok, result.error
    sent = main_requests(md)
    assert sent and all(r.body["model"] == OPUS and effort_of(r.body) == "low" for r in sent)


async def test_a_change_while_a_question_waits_reaches_the_next_request(double_factory: Any, cli_home: Path,
                                                                        tmp_path: Path) -> None:
    md = await double_factory(asking())
    ch = HumanChannel()
    rt = make_runtime(tmp_path, md, cli_home, model=OPUS, effort="low")
    ch.on_event = Recorder(answer_when_asked(ch, lambda: rt.steer(model=SONNET, effort="high")))
    try:
        first = await rt.run(spec(channel=ch), "go")
        second = await rt.run(spec(), "and now?")  # a new attempt: the new effort too
    finally:
        rt.close()
    assert first.ok and second.ok, (first.error, second.error)
    sent = main_requests(md)
    assert [r.body["model"] for r in sent] == [OPUS] + [SONNET] * (len(sent) - 1)
    assert sent[1].last_tool_result.startswith("blue")  # the request after the answer: same turn, new model
    assert [effort_of(r.body) for r in sent[:2]] == ["low", "low"]  # effort waits for the next attempt
    assert {effort_of(r.body) for r in sent[2:]} == {"high"}


async def test_a_model_a_live_cli_refuses_is_a_clear_error_and_the_run_goes_on(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(asking(models=[OPUS]))
    ch = HumanChannel()
    rt = make_runtime(tmp_path, md, cli_home, model=OPUS)
    refusals: list[str] = []

    async def change() -> None:
        try:
            await rt.steer(model="claude-nonesuch")
        except ModelRefused as exc:
            refusals.append(str(exc))

    ch.on_event = Recorder(answer_when_asked(ch, change))
    try:
        result = await rt.run(spec(channel=ch), "go")
    finally:
        rt.close()
    assert result.ok, result.error
    assert refusals and "claude-nonesuch" in refusals[0]
    assert rt.steering.now.model == OPUS
    assert {r.body["model"] for r in main_requests(md)} == {OPUS}
    assert main_requests(md)[-1].last_tool_result.startswith("blue")


async def test_a_model_refused_when_the_cli_starts_is_taken_back(double_factory: Any, cli_home: Path,
                                                                 tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": [{"say": "Done."}]}, models=[OPUS]))
    rt = make_runtime(tmp_path, md, cli_home, model=OPUS)
    events = Recorder()
    try:
        await rt.steer(model="claude-nonesuch")  # no CLI live: the next attempt starts with it
        result = await rt.run(spec(), "go", on_event=events)
    finally:
        rt.close()
    assert result.ok, result.error
    refused = [RetryPayload.of(e) for e in events.kinds("retry") if RetryPayload.of(e).model_refused]
    assert [(p.model_refused, p.model) for p in refused] == [("claude-nonesuch", OPUS)]
    assert rt.steering.now.model == OPUS
    assert main_requests(md)[-1].body["model"] == OPUS and main_requests(md)[-1].served == "turn"


def test_steering_refuses_an_unknown_effort_and_keeps_what_it_had() -> None:
    steering = Steering("a", "low")
    with pytest.raises(ValueError, match="Unknown effort"):
        steering.change(effort="extreme")
    assert steering.change(model="b").model == "b"
    assert steering.change(model="c").model == "c"
    assert steering.refused("API Error: 404 not_found_error model: c", 404) == ("c", "a")
    assert steering.now.model == "a" and steering.now.effort == "low"
    assert steering.refused("API Error: 404 model: a", 404) is None  # nothing was being tried
