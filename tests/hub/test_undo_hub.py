"""Undo through the hub's door, the real SDK + bundled CLI on the model double: the agent changes files with
Bash (which the SDK's own file checkpointing would not see), a round's start and an answered question are
checkpoints, "Undo changes…" lists them with the files each would put back, a Restore puts them back byte for
byte in a new bot process, and the agent hears of it in its next turn. Refused while live, for someone who
neither started the run nor administers the channel, and for an unknown checkpoint; nothing changes then."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from adapters.hub import Undo
from adapters.memory_surface import MemorySurface
from adapters.state import ChannelPolicy, SQLiteStateStore
from adapters.transport.plan import RunPlan
from flower_core import AgentSpec, HumanChannel, Step, Workflow
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import THREAD, Watch, ask_call, button, make_hub

FIRST = "printf 'one\\n' > a.txt"
SECOND = "printf 'two\\n' > a.txt; printf 'new' > b.txt"


def bash(command: str) -> dict[str, Any]:
    return {"tool": "Bash", "input": {"command": command}}


def worker(plan: RunPlan) -> Workflow:
    ch = HumanChannel(timeout_s=60)
    spec = AgentSpec(name="worker", allowed_tools=["Read", "Bash"], permission_mode="acceptEdits", channel=ch,
                     max_turns=12)
    return Workflow([Step("work", spec, f"work: {plan.task}")], channel=ch)


def scenario() -> Any:
    return scenario_of({"name": "work", "match": "work: ", "after_end": "Heard: {last_user_text}", "turn": [
        {"say": "First file.", "call": [bash(FIRST)]},
        {"say": "Asking.", "call": [ask_call("Go on?", ["yes", "no"])]},
        {"say": "Changing it.", "call": [bash(SECOND)]},
        {"say": "Done."},
    ]})


def hub_on(tmp_path: Path, md: Any, cli_home: Path, surface: MemorySurface) -> Any:
    home = tmp_path / "home"  # the Bash tool sources the user's shell config: give it an empty HOME
    home.mkdir(exist_ok=True)
    store = SQLiteStateStore(tmp_path / "state.db")
    store.set_channel_policy("memory:C1", ChannelPolicy(responders={"bob"}))
    return make_hub(tmp_path, md, cli_home, surface, store, factory=worker,
                    env={**md.env(cli_home), "HOME": str(home)})


async def test_undo_lists_restores_byte_for_byte_after_a_restart_and_the_agent_hears_of_it(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario())
    surface = MemorySurface()
    watch = Watch(surface)
    hub = hub_on(tmp_path, md, cli_home, surface)
    run = (await drive(hub).start("make files", THREAD, "alice")).run_id
    card = await watch.card("ask:1-q1")
    workspace = Path(hub.store.get_run(run).workspace)
    assert (workspace / "a.txt").read_bytes() == b"one\n"

    live = await hub.submit(Undo(run), "alice")
    assert not live.ok and "stop it first" in live.message
    assert (await drive(hub).handle_action(button(card, "yes"), "alice", delivery_id="d-1")).ok
    await hub.query.wait(run)
    assert (workspace / "a.txt").read_bytes() == b"two\n" and (workspace / "b.txt").read_bytes() == b"new"

    listed = hub.query.checkpoints(run)
    assert [(cp.id, cp.label, files) for cp, files in listed] == [
        ("c2", "question 1-q1 answered", ["a.txt", "b.txt"]), ("c1", "round 1 started", ["a.txt", "b.txt"])]
    summary = [m for m in surface.thread(kind="summary")][-1]
    assert (await drive(hub).handle_action(button(summary, "Undo changes…"), "alice", delivery_id="d-2")).ok
    offer = await watch.until(lambda s: next((m for m in s.thread(kind="notice") if m.key.startswith("undo:")), None))
    assert [b.label for b in offer.buttons] == ["Restore c2", "Restore c1"]
    assert "c2 · question 1-q1 answered" in offer.text and "a.txt, b.txt" in offer.text

    refused = [await hub.submit(Undo(run, "c2"), "bob"),  # may answer, but did not start it
               await hub.submit(Undo(run, "c9"), "alice")]
    assert [r.ok for r in refused] == [False, False]
    assert "no checkpoint 'c9'" in refused[1].message
    assert (workspace / "a.txt").read_bytes() == b"two\n" and (workspace / "b.txt").exists()
    await hub.close()
    hub.store.close()

    hub = hub_on(tmp_path, md, cli_home, surface)  # a new process: the checkpoints are on disk
    await hub.recover()
    restored = await drive(hub).handle_action(button(offer, "Restore c2"), "alice", delivery_id="d-3")
    assert restored.ok, restored.message
    assert (workspace / "a.txt").read_bytes() == b"one\n" and not (workspace / "b.txt").exists()
    await watch.until(lambda s: any("Restored the workspace to checkpoint c2" in m.text
                                    for m in s.thread(kind="notice")))
    again = await hub.submit(Undo(run, "c2"), "alice")
    assert again.ok and "Nothing to undo" in again.message

    assert (await drive(hub).continue_run(run, "check the files", "alice")).ok
    await hub.query.wait(run)
    heard = md.model_requests("work")[-1].last_user_text
    assert "undid changes" in heard and "checkpoint c2" in heard and "check the files" in heard
    await hub.close()
    hub.store.close()
