"""A late click, and a button the hub cannot route: the hub's one rule (CardRules.check) decides what the
person is told, every time, and nothing changes.

A hub whose runs are records in the store with their card ledgers on disk (no CLI): the rule reads only
those, so every row of its table is set up directly. (The same lines through Slack, Discord and the web
page, with real runs and a restart: tests/platforms/*/test_*_stale_clicks.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters import ids
from adapters.hub import CardProblem, Hub
from adapters.hub.ledger import CardLedger
from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.state import MemoryStateStore, RunRecord, RunStatus
from tests.support.drive import drive
from tests.support.hub_support import hub_of

THREAD = ThreadRef("memory", "C1", "t1")
RUN = "r0000001"
ANSWERED = "That question is already settled (answered by alice) on Slack."
LEFT_BEHIND = "That question was asked before the bot restarted, and the run went on without asking it again."
TIMED_OUT = "That question is already settled (timeout)."
ENDED = "This run has ended (stopped); its questions are closed."
HELD = "An answer from bob is already waiting for that question."


@pytest.fixture
def hub(tmp_path: Path) -> Hub:
    """A run asleep since a restart (parked), its cards as a life of two wakes left them."""
    hub = hub_of(MemorySurface(), MemoryStateStore(), root=tmp_path / "runs")
    hub.store.save_run(RunRecord(RUN, THREAD, "alice", "a task", RunStatus.PARKED, str(tmp_path), str(tmp_path / RUN)))
    hub.store.bind_thread(THREAD, RUN)
    ledger = CardLedger(tmp_path / RUN)
    for card_id in ("1-q1", "1-q2", "2-q1", "2-q2", "2-q3"):
        ledger.asked(card_id, f"Question {card_id}?", ["yes", "no"])
    ledger.settled("1-q1", "answered", by="alice", answer="yes", place="Slack")
    ledger.settled("1-q2", "cancelled", left_behind=True)  # the woken run did not ask it again
    ledger.settled("2-q1", "timeout")
    ledger.hold("2-q3", "no", "bob")
    return hub


def lines(hub: Hub) -> dict[str, tuple[CardProblem, str]]:
    return {card: hub.query.card_state(RUN, card) for card in ("1-q1", "1-q2", "2-q1", "2-q2", "2-q3", "7-q7")}


def test_the_rule_says_why_a_card_takes_no_answer(hub: Hub) -> None:
    assert lines(hub) == {
        "1-q1": (CardProblem.SETTLED, ANSWERED),
        "1-q2": (CardProblem.SETTLED, LEFT_BEHIND),
        "2-q1": (CardProblem.SETTLED, TIMED_OUT),
        "2-q2": (CardProblem.NONE, ""),  # still open: an answer wakes the run
        "2-q3": (CardProblem.HELD, HELD),
        "7-q7": (CardProblem.UNKNOWN, "I don't know that question."),
    }
    hub.store.set_run_status(RUN, RunStatus.STOPPED)
    ended = lines(hub)
    assert ended["1-q1"] == (CardProblem.SETTLED, ANSWERED)  # who answered says more than "ended"
    assert ended["1-q2"] == (CardProblem.SETTLED, LEFT_BEHIND)
    assert ended["2-q1"] == ended["2-q2"] == ended["2-q3"] == (CardProblem.ENDED, ENDED)


async def test_every_late_click_is_told_the_rules_line_by_the_platform_every_time(hub: Hub) -> None:
    hub.store.set_run_status(RUN, RunStatus.STOPPED)
    surface = hub.surfaces["memory"]
    assert isinstance(surface, MemorySurface)
    clicks = [(ids.encode("ans", RUN, "2-q2", 0), ENDED), (ids.encode("ans", RUN, "2-q2", 1), ENDED),
              (ids.encode("dec", RUN, "2-q2"), ENDED), (ids.encode("ans", RUN, "1-q1", 1), ANSWERED),
              (ids.encode("ans", RUN, "1-q1", 7), ANSWERED),  # an option the card never had: still who answered
              (ids.encode("txt", RUN, "1-q2"), LEFT_BEHIND)]
    for n, (action_id, line) in enumerate(clicks):
        words = "words" if "txt" in action_id else None
        result = await drive(hub).handle_action(action_id, "bob", delivery_id=f"d{n}", text=words)
        assert (result.ok, result.duplicate, result.told, result.message) == (False, True, False, line), action_id
        assert result.to_show(quiet_when_ok=True) == line  # the platform shows it where the click came from
    assert surface.notices == []  # the hub told nobody itself: one line per click, from the platform
    assert [c.card_id for c in CardLedger(hub.store.get_run(RUN).run_dir).open_cards()] == ["2-q2", "2-q3"]  # type: ignore[union-attr]
    replay = await drive(hub).handle_action(clicks[0][0], "bob", delivery_id="d0")
    assert replay.replayed and replay.to_show(quiet_when_ok=True) is None  # the same delivery again: said once


async def test_a_refusal_the_hub_told_itself_is_not_shown_twice(hub: Hub) -> None:
    hub.store.set_run_status(RUN, RunStatus.STOPPED)
    result = await drive(hub).handle_action(ids.encode("int", RUN), "bob", delivery_id="d1", text="hey")
    surface = hub.surfaces["memory"]
    assert isinstance(surface, MemorySurface)
    assert result.told and not result.ok and surface.notices_for("bob") == [result.message]
    assert result.to_show(quiet_when_ok=False) is None


async def test_a_verb_nothing_routes_is_a_clear_refusal_not_the_oracle(hub: Hub,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(ids.VERBS, "zap", (False, False))  # a newer version's button
    result = await drive(hub).handle_action(ids.encode("zap", RUN), "alice", delivery_id="d1", text="what is this?")
    assert not result.ok and "I don't know what that button does ('zap')" in result.message
    assert result.to_show(quiet_when_ok=True) == result.message
    assert hub.store.count_unsettled_intents() == 0  # nothing reached the run (no oracle question logged)
