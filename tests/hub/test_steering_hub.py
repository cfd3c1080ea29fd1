"""Model and effort per run through the hub's door, the real SDK + bundled CLI and the model double: chosen at
the start (or the bot's default), changed while a question waits, shown on the status card and by
`hub.query.model`, kept across a SIGKILL of the CLI and a new process; bad choices change nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.hub import Chosen, RunOptions, Start, Steer
from adapters.memory_surface import MemorySurface
from adapters.state import ChannelPolicy, SQLiteStateStore
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import THREAD, Watch, ask_call, button, kill_cli_children, make_hub, transcript_has

OPUS, SONNET = "claude-opus-4-6", "claude-sonnet-4-6"


def asking(models: list[str] | None = None) -> Any:
    return scenario_of({"name": "main", "after_end": "Going with {last_tool_result}.", "turn": [
        {"say": "One question first.", "call": [ask_call("Tabs or spaces?", ["tabs", "spaces"])]},
    ]}, models=models)


def effort_of(body: dict[str, Any]) -> str | None:
    config = body.get("output_config")
    return config.get("effort") if isinstance(config, dict) else None


def sent(md: Any) -> list[tuple[str, str | None]]:
    """(model, effort) of each request of the run's agent (the CLI's own side requests left out)."""
    return [(r.body["model"], effort_of(r.body)) for r in md.model_requests() if r.body.get("tools")]


def status_field(surface: MemorySurface, name: str) -> str:
    card = [p for p in surface.find("status") if p.msg.key == "status"][-1].msg
    return dict(card.fields).get(name, "")


async def test_a_change_while_a_question_waits_reaches_the_model_and_survives_a_kill(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(asking())
    surface = MemorySurface()
    watch = Watch(surface)
    hub = make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"))
    started = await hub.submit(Start("pick", RunOptions(model=OPUS, effort="low")), "alice", where=THREAD)
    run = started.run_id
    card = await watch.card("ask:1-q1")
    assert sent(md) == [(OPUS, "low")]
    assert status_field(surface, "Model") == f"{OPUS} · effort low"

    changed = await hub.submit(Steer(run, model=SONNET, effort="high"), "alice")
    assert changed.ok, changed.message
    assert hub.query.model(run) == Chosen(SONNET, "high")
    await watch.until(lambda s: status_field(s, "Model") == f"{SONNET} · effort high")

    await transcript_has(hub.live[run], "ask", "Tabs or spaces?")
    assert kill_cli_children()  # the bot dies while the question waits
    await hub.close()
    hub.store.close()

    hub = make_hub(tmp_path, md, cli_home, surface, SQLiteStateStore(tmp_path / "state.db"))
    assert await hub.recover() == []
    assert hub.query.model(run) == Chosen(SONNET, "high")
    assert (await drive(hub).handle_action(button(card, "spaces"), "alice", delivery_id="d-1")).ok
    await hub.query.wait(run)
    after = sent(md)[1:]
    assert after and set(after) == {(SONNET, "high")}  # the new process's CLI starts with both
    assert hub.store.get_run(run).status == "done"  # type: ignore[union-attr]
    await hub.close()
    hub.store.close()


async def test_bad_choices_are_refused_and_change_nothing(double_factory: Any, cli_home: Path,
                                                          tmp_path: Path) -> None:
    md = await double_factory(asking(models=[OPUS]))
    surface = MemorySurface()
    watch = Watch(surface)
    store = SQLiteStateStore(tmp_path / "state.db")
    store.set_channel_policy("memory:C1", ChannelPolicy(responders={"bob"}))
    hub = make_hub(tmp_path, md, cli_home, surface, store, model=OPUS,
                   channel_models={"memory:C1": (OPUS, "claude-nonesuch")})
    refused = await hub.submit(Start("pick", RunOptions(model=SONNET)), "alice", where=THREAD)
    assert not refused.ok and "not allowed" in refused.message
    run = (await hub.submit(Start("pick"), "alice", where=THREAD)).run_id  # the bot's default model
    card = await watch.card("ask:1-q1")
    assert [m for m, _ in sent(md)] == [OPUS]  # (no effort chosen: the CLI sends its own default)

    for steer, words in [(Steer(run, effort="extreme"), "Unknown effort"),
                         (Steer(run, model=SONNET), "not allowed"),
                         (Steer(run, model="claude-nonesuch"), "refused model 'claude-nonesuch'")]:
        result = await hub.submit(steer, "alice")
        assert not result.ok and words in result.message, result.message
        assert hub.query.model(run) == Chosen(OPUS, "")
    assert not (await hub.submit(Steer(run, effort="max"), "mallory")).ok  # may not write to the run
    assert hub.query.model(run) == Chosen(OPUS, "")

    assert (await drive(hub).handle_action(button(card, "tabs"), "alice", delivery_id="d-1")).ok
    await hub.query.wait(run)
    assert {m for m, _ in sent(md)} == {OPUS}  # the run went on with the model it had
    assert hub.store.get_run(run).status == "done"  # type: ignore[union-attr]
    await hub.close()
    hub.store.close()
