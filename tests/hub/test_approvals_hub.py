"""Tool approvals on the hub: the real SDK + CLI on the model double, the in-memory surface.

The bot's policy (HubSettings.approvals, as `[bot] ask_tools` sets it) or a run's own `approve`
list makes the agent's Bash call a 🔐 card; a click allows it once (the command runs, once), a denial
with words reaches the model, and a late click is told the card is settled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.hub import Hub, RunOptions
from adapters.memory_surface import MemorySurface
from adapters.platform import OutMessage
from adapters.state import MemoryStateStore
from adapters.view import AskCard
from adapters.view.approval_card import approval_option
from adapters.view.asks import render
from bots.bot import build_parser, hub_settings
from bots.config import ConfigError, load_config
from bots.flows import single_flow
from tests.conftest import scenario_of
from tests.support.drive import drive
from tests.support.hub_support import QUICK, THREAD, Watch, button, hub_of
from tests.support.runtime_support import FAST

EFFECT = "echo ran >> effect.txt; echo out=42"
TURNS = [{"say": "Running.", "call": [{"tool": "Bash", "input": {"command": EFFECT}}]},
         {"say": "Saw: {last_tool_result}"}]


def hub_for(tmp_path: Path, md: Any, cli_home: Path, surface: MemorySurface, store: MemoryStateStore,
            **kw: Any) -> Hub:
    home = tmp_path / "home"  # the Bash tool sources the user's shell config: give it an empty HOME
    home.mkdir(exist_ok=True)
    return hub_of(surface, store, root=tmp_path / "runs", env={**md.env(cli_home), "HOME": str(home)},
                  factory=single_flow, view=QUICK, runtime_options={"resilience": FAST}, **kw)


def status(surface: MemorySurface) -> OutMessage | None:
    found = [p.msg for p in surface.find("status") if p.msg.key == "status"]
    return found[-1] if found else None


async def test_allow_once_on_the_card_runs_the_command_once_and_a_late_click_is_told(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": TURNS}))
    surface, store = MemorySurface(), MemoryStateStore()
    watch = Watch(surface)
    hub = hub_for(tmp_path, md, cli_home, surface, store,
                  approvals={"ask_tools": ["Bash"], "allow_tools": ["Bash(git status:*)"]})
    try:
        started = await drive(hub).start("run it", THREAD, "alice")
        assert started.ok
        card = await watch.card("ask:1-q1")
        assert card.title == "🔐 The agent wants to run Bash" and EFFECT in card.text
        assert [b.label for b in card.buttons] == ["Allow once", "Allow Bash for this run", "Deny…"]
        waiting = await watch.until(lambda s: (m := status(s)) is not None and "Waiting for approval" in m.title)
        assert waiting is not None
        workspace = Path(store.get_run(started.run_id).workspace)  # type: ignore[union-attr]
        assert not (workspace / "effect.txt").exists()

        assert (await drive(hub).handle_action(button(card, "Allow once"), "alice", delivery_id="d1")).ok
        live = await hub.query.wait(started.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert (workspace / "effect.txt").read_text() == "ran\n"
        assert md.model_requests()[-1].last_tool_result == "out=42"
        settled = await watch.card("ask:1-q1", open_=False)
        assert settled.title == "✅ Bash allowed once by alice"
        late = await drive(hub).handle_action(button(card, "Allow Bash for this run"), "bea", delivery_id="d2")
        assert not late.ok and "already settled" in late.message
        assert (workspace / "effect.txt").read_text() == "ran\n"
    finally:
        await hub.close()


async def test_a_runs_own_approve_list_asks_and_a_denial_with_words_reaches_the_model(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": TURNS}))
    surface, store = MemorySurface(), MemoryStateStore()
    watch = Watch(surface)
    hub = hub_for(tmp_path, md, cli_home, surface, store)
    try:
        started = await drive(hub).start("run it", THREAD, "alice", options=RunOptions(approve=("Bash",)))
        assert started.ok
        await watch.card("ask:1-q1")
        assert (await drive(hub).approve(started.run_id, "1-q1", "deny", "alice", "Not here; list the files.")).ok
        live = await hub.query.wait(started.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        workspace = Path(store.get_run(started.run_id).workspace)  # type: ignore[union-attr]
        assert not (workspace / "effect.txt").exists()
        assert md.model_requests()[-1].last_tool_result.endswith("Not here; list the files.")
        settled = await watch.card("ask:1-q1", open_=False)
        assert settled.title == "🚫 Bash denied by alice" and "Reason: Not here; list the files." in settled.text
        assert (await drive(hub).approve(started.run_id, "1-q1", "once", "bea")).duplicate
    finally:
        await hub.close()


async def test_a_bad_approve_list_is_refused_before_the_run_starts(double_factory: Any, cli_home: Path,
                                                                  tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": TURNS}))
    surface, store = MemorySurface(), MemoryStateStore()
    hub = hub_for(tmp_path, md, cli_home, surface, store)
    try:
        result = await drive(hub).start("run it", THREAD, "alice", options=RunOptions(approve=("Bash(",)))
        assert not result.ok and "Bad approval list" in result.message and md.requests == []
    finally:
        await hub.close()


def test_the_policy_comes_from_bot_and_channel_tables_and_a_bad_rule_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "bot.toml"
    path.write_text('[bot]\nask_tools = ["Bash", "Edit"]\nallow_tools = ["Bash(git status:*)"]\n'
                    'approval_timeout_s = 3600\nunattended_approvals = "allow"\n'
                    '[channels."slack:C1"]\ndeny_tools = ["Bash(rm -rf:*)"]\n', encoding="utf-8")
    cfg = load_config(build_parser().parse_args(["--config", str(path)]), {})
    settings = hub_settings(cfg)
    assert settings.approvals == {"ask_tools": ["Bash", "Edit"], "allow_tools": ["Bash(git status:*)"],
                                  "approval_timeout_s": 3600, "unattended_approvals": "allow"}
    assert settings.channel_approvals == {"slack:C1": {"deny_tools": ["Bash(rm -rf:*)"]}}
    for bad in ('[bot]\nask_tools = "Bash"\n', '[bot]\nunattended_approvals = "yes"\n',
                '[channels."slack:C1"]\ndeny_tools = ["rm -rf"]\n', '[bot]\napproval_timeout_s = 0\n'):
        path.write_text(bad, encoding="utf-8")
        with pytest.raises(ConfigError):
            load_config(build_parser().parse_args(["--config", str(path)]), {})


async def test_words_on_an_approval_card_deny_whatever_they_say(double_factory: Any, cli_home: Path,
                                                               tmp_path: Path) -> None:
    md = await double_factory(scenario_of({"name": "main", "turn": TURNS}))
    surface, store = MemorySurface(), MemoryStateStore()
    watch = Watch(surface)
    hub = hub_for(tmp_path, md, cli_home, surface, store, approvals={"ask_tools": ["Bash"]})
    try:
        started = await drive(hub).start("run it", THREAD, "alice")
        card = await watch.card("ask:1-q1")
        words = next(b for b in card.buttons if b.label == "Deny…")
        assert (await drive(hub).handle_action(words.action_id, "alice", delivery_id="w1")).needs_input  # a words form
        assert (await drive(hub).answer(started.run_id, "1-q1", "yes", "alice")).ok  # typed in the Deny… form
        live = await hub.query.wait(started.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        workspace = Path(store.get_run(started.run_id).workspace)  # type: ignore[union-attr]
        assert not (workspace / "effect.txt").exists() and md.model_requests()[-1].last_tool_result.endswith("yes")
        settled = await watch.card("ask:1-q1", open_=False)
        assert settled.title == "🚫 Bash denied by alice" and "Reason: yes" in settled.text
    finally:
        await hub.close()


def test_the_card_previews_an_edit_as_a_bounded_diff_and_names_each_outcome() -> None:
    old = "\n".join(f"line {i}" for i in range(40))
    new = "\n".join(f"LINE {i}" for i in range(40))
    facts = {"tool": "Edit", "input": {"file_path": "/w/a.py", "old_string": old, "new_string": new}}
    card = AskCard("1-q1", "q1", "The agent wants to run Edit: /w/a.py",
                   ["Allow once", "Allow Edit for this run", "Deny"], kind="approval", facts=facts)
    msg = render("r1", card)
    assert msg.title == "🔐 The agent wants to run Edit" and "File: `/w/a.py`" in msg.text
    assert "-line 0" in msg.text and "_… 61 more lines_" in msg.text  # 81 diff lines, 20 shown
    assert len(msg.text.splitlines()) < 30  # bounded however long the edit
    small = AskCard("1-q2", "q2", "?", card.options, kind="approval", facts={"tool": "Write", "input": {
        "file_path": "/w/b.txt", "content": "hello"}})
    assert "+hello" in render("r1", small).text and "more lines" not in render("r1", small).text
    outcomes = {("answered", "Allow once"): "✅ Edit allowed once by ana",
                ("answered", "Allow Edit for this run"): "✅ Edit allowed for this run by ana",
                ("declined", "no"): "🚫 Edit denied by ana", ("timeout", ""): "⌛ Not approved in time — the call "
                "did not run", ("cancelled", ""): "✖️ Closed — the run stopped before a decision"}
    for (state, answer), title in outcomes.items():
        card.state, card.answer, card.by = state, answer, "ana"
        assert render("r1", card).title == title and not render("r1", card).buttons
    assert approval_option(card.options, "run") == "Allow Edit for this run" and approval_option([], "deny") is None
    with pytest.raises(ValueError, match="once, run, deny"):
        approval_option(card.options, "always")


async def test_a_long_edit_comes_with_its_whole_diff_as_a_file_beside_the_card(
        double_factory: Any, cli_home: Path, tmp_path: Path) -> None:
    """The card previews 20 diff lines; the whole change is a file posted with it (written by the core
    beside the run, against the file as it is now), and allowed, the edit is made once."""
    before = "".join(f"line {i}\n" for i in range(60))
    after = "".join(f"LINE {i}\n" for i in range(60))
    md = await double_factory(scenario_of({"name": "main", "turn": [
        {"say": "Rewriting.", "call": [{"tool": "Write", "input": {"file_path": "big.txt", "content": after}}]},
        {"say": "Saw: {last_tool_result}"}]}))
    surface, store = MemorySurface(), MemoryStateStore()
    watch = Watch(surface)
    hub = hub_for(tmp_path, md, cli_home, surface, store, approvals={"ask_tools": ["Write"]})
    try:
        started = await drive(hub).start("rewrite it", THREAD, "alice")
        assert started.ok
        workspace = Path(store.get_run(started.run_id).workspace)  # type: ignore[union-attr]
        (workspace / "big.txt").write_text(before)  # there before the model's first turn is served
        card = await watch.card("ask:1-q1")
        assert "_… " in card.text and "more lines_" in card.text  # the preview is bounded
        posted = await watch.until(lambda s: s.find("diff:1-q1"))
        msg = posted[0].msg
        assert msg.attachment is not None and "big.txt" in msg.text and "lines" in msg.text
        whole = Path(msg.attachment.path).read_text()
        assert msg.attachment.size == len(whole.encode())
        assert all(f"-line {i}\n" in whole and f"+LINE {i}\n" in whole for i in range(60))  # all of it
        assert (workspace / "big.txt").read_text() == before
        assert (await drive(hub).handle_action(button(card, "Allow once"), "alice", delivery_id="d1")).ok
        live = await hub.query.wait(started.run_id)
        assert live is not None and live.outcome is not None and live.outcome.state == "done"
        assert (workspace / "big.txt").read_text() == after
    finally:
        await hub.close()
