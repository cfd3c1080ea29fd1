"""The door's pipeline, in process and without a run side: the order it decides in (id, duplicate,
routing, run, who may, handler), its tables, and that every verb of the id codec is routed."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from adapters.hub import (
    NOT_MINE,
    Answer,
    Attach,
    Attached,
    Click,
    Follow,
    Hub,
    IntentResult,
    Said,
    ShowFiles,
    Start,
    Stop,
    Unfollow,
    opens_form,
)
from adapters.hub.intents import PERMISSIONS, RunIntent
from adapters.hub.routing import FORMS, click
from adapters.ids import VERBS, ActionId, encode
from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.state import ChannelPolicy, MemoryStateStore, RunRecord

THREAD = ThreadRef("memory", "C1", "t1")
RUN = "r00000001"


@pytest.fixture
def door() -> tuple[Hub, MemorySurface]:
    surface, store = MemorySurface(), MemoryStateStore()
    hub = Hub(surface, store)
    # A run asleep since a restart: the door finds it, its cards are checked, nothing runs.
    store.save_run(RunRecord(RUN, THREAD, "alice", "an old task", "died", "/nonexistent", "/nonexistent/run"))
    store.bind_thread(THREAD, RUN)
    store.save_ask_message(RUN, "1-q1", "m1", "Tabs or spaces?", ["tabs", "spaces"])  # its open card
    store.set_channel_policy("memory:C1", ChannelPolicy(starters={"alice"}, responders={"alice"}))
    return hub, surface


def test_every_verb_of_the_codec_is_routed_and_every_form_is_a_verb(door: tuple[Hub, MemorySurface]) -> None:
    hub, _ = door
    for verb, (needs_card, needs_option) in VERBS.items():
        action = ActionId(verb, RUN, "1-q1" if needs_card else "", 0 if needs_option else None)
        routed = click(action, Click(action.encode(), text="words"), hub.cards)
        assert not (isinstance(routed, IntentResult) and "don't know" in routed.message), verb
    assert set(FORMS) <= set(VERBS)


def test_the_permission_table_covers_every_run_intent_but_those_with_their_own_rule() -> None:
    every = set(typing.get_args(RunIntent))
    own = {Follow, ShowFiles} | {t for t in every if t.__name__ == "Resume"}
    assert set(PERMISSIONS) == every - own


def test_intents_are_frozen_values() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        Stop(RUN).run_id = "other"  # type: ignore[misc]


def test_opens_form_is_the_one_rule_for_buttons_that_want_words() -> None:
    assert opens_form(Click(encode("txt", RUN, "1-q1")))
    assert not opens_form(Click(encode("txt", RUN, "1-q1"), text="words"))
    assert not opens_form(Click(encode("stop", RUN)))  # no Stop form on this platform: it stops
    assert opens_form(Click(encode("stop", RUN), stop_form=True))
    assert not opens_form(Click(encode("ans", RUN, "1-q1", 0)))
    assert not opens_form(Click("fl9:nope"))


async def test_an_id_that_is_not_ours_is_said_so_even_when_its_delivery_repeats(
        door: tuple[Hub, MemorySurface]) -> None:
    hub, surface = door
    for _ in range(2):
        result = await hub.submit(Click("fl1:bogus:" + RUN + ":"), "alice", delivery_id="d1")
        assert not result.ok and result.message.startswith(NOT_MINE) and not result.told
    assert surface.notices_for("alice") == []  # the platform shows it where the click was


async def test_a_repeated_delivery_acts_once(door: tuple[Hub, MemorySurface]) -> None:
    hub, _ = door
    first = await hub.submit(Click(encode("txt", RUN, "1-q1")), "alice", delivery_id="d2")
    again = await hub.submit(Click(encode("txt", RUN, "1-q1")), "alice", delivery_id="d2")
    assert first.form is not None and first.needs_input == first.form.prompt
    assert again.replayed and again.message == "Already handled." and again.run_id == RUN
    assert again.to_show(quiet_when_ok=False) is None


async def test_a_words_button_on_a_card_the_run_does_not_know_is_told_so_without_a_form(
        door: tuple[Hub, MemorySurface]) -> None:
    hub, _ = door
    result = await hub.submit(Click(encode("txt", RUN, "1-q9")), "alice", delivery_id="d9")
    assert (result.ok, result.form, result.message) == (False, None, "I don't know that question.")


async def test_who_may_is_checked_before_a_form_opens_and_the_refusal_is_told(
        door: tuple[Hub, MemorySurface]) -> None:
    hub, surface = door
    refused = await hub.submit(Click(encode("txt", RUN, "1-q1")), "mallory")
    assert not refused.ok and refused.told and refused.form is None
    assert refused.to_show(quiet_when_ok=False) is None  # told once, by the hub
    assert surface.notices_for("mallory") == [refused.message]


async def test_an_unknown_run_is_named_and_nothing_is_told(door: tuple[Hub, MemorySurface]) -> None:
    hub, _ = door
    result = await hub.submit(Answer("rnothere", "1-q1", "blue"), "alice")
    assert (result.ok, result.message, result.told) == (False, "No run rnothere.", False)


async def test_a_message_in_a_thread_without_a_run_is_ignored(door: tuple[Hub, MemorySurface]) -> None:
    hub, _ = door
    result = await hub.submit(Said("hello"), "alice", where=ThreadRef("memory", "C1", "elsewhere"))
    assert result.ignored and result.to_show(quiet_when_ok=False) is None


async def test_a_refused_start_changes_nothing(door: tuple[Hub, MemorySurface]) -> None:
    hub, _ = door
    runs = len(hub.store.list_runs())
    result = await hub.submit(Start("build it"), "mallory", where=ThreadRef("memory", "C1", "t2"))
    assert not result.ok and result.told and len(hub.store.list_runs()) == runs


async def test_an_attach_answers_with_its_files_even_when_refused(door: tuple[Hub, MemorySurface]) -> None:
    hub, _ = door
    result: IntentResult = await hub.submit(Attach(RUN, ()), "mallory")
    assert isinstance(result, Attached) and not result.ok and result.files == ()


async def test_intents_that_need_a_place_say_so(door: tuple[Hub, MemorySurface]) -> None:
    hub, _ = door
    for intent in (Start("x"), Said("x"), Follow(RUN), Unfollow()):
        with pytest.raises(ValueError, match="where="):
            await hub.submit(intent, "alice")
