"""The door's contract (`run_door_conformance`) on every platform the project ships, each through its real
inbound path: the memory surface (the hub's own), Slack (slack-bolt over Socket Mode against the Slack
double), Discord (discord.py logged in to the Discord double) and the web page (its HTTP API); the gaps
two platforms have today, pinned as they fail; and drivers broken on purpose, to show that each check
catches what it is about."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from adapters.hub import Click, IntentResult, Interrupt, Said
from adapters.hub.testing import DOOR_CHECKS, DoorConformanceError, DoorDriver, QuestionRuns, Told, run_door_conformance
from adapters.ids import decode
from adapters.platform import ThreadRef
from tests.support.door_drivers import DiscordDriver, MemoryDriver, SlackDriver, WebDriver, verb_of

Open = Callable[[QuestionRuns, Path], Awaitable[DoorDriver]]

FORGED, FOREIGN = "a_forged_id_is_not_mine_and_changes_nothing", "a_foreign_id_is_not_mine_and_changes_nothing"
# A platform that cannot play a check says so; these are the ones each cannot play.
WEB_CANNOT = {"an_answer_the_policy_refuses_is_told_why_and_changes_nothing"}  # one person uses the page
# What two platforms get wrong today (each pinned below by a test of how it fails, to flip when fixed).
DISCORD_GAPS: set[str] = set()
WEB_GAPS: set[str] = set()


def factory(open_: Open, tmp_path: Path) -> Callable[[QuestionRuns], Awaitable[DoorDriver]]:
    """make_driver for the suite: each check's bot gets its own run directory."""
    n = itertools.count(1)

    def make(kit: QuestionRuns) -> Awaitable[DoorDriver]:
        return open_(kit, tmp_path / f"check{next(n)}")
    return make


async def memory(kit: QuestionRuns, root: Path) -> DoorDriver:
    return MemoryDriver(kit, root)


def every_check_but(*gaps: set[str]) -> set[str]:
    return set(DOOR_CHECKS).difference(*gaps)


# ---- the four platforms -------------------------------------------------------------------------------
async def test_the_memory_surface_keeps_the_door(tmp_path: Path) -> None:
    report = await run_door_conformance(factory(memory, tmp_path))
    assert not report.skipped and report.passed == list(DOOR_CHECKS)


async def test_slack_keeps_the_door(tmp_path: Path) -> None:
    report = await run_door_conformance(factory(SlackDriver.open, tmp_path))
    assert not report.skipped and report.passed == list(DOOR_CHECKS)


async def test_discord_keeps_the_door(tmp_path: Path) -> None:
    report = await run_door_conformance(factory(DiscordDriver.open, tmp_path), only=every_check_but(DISCORD_GAPS))
    assert not report.skipped and set(report.passed) == every_check_but(DISCORD_GAPS)


async def test_the_web_page_keeps_the_door(tmp_path: Path) -> None:
    report = await run_door_conformance(factory(WebDriver.open, tmp_path), only=every_check_but(WEB_GAPS))
    assert set(report.skipped) == WEB_CANNOT
    assert "one person uses this platform" in report.skipped[next(iter(WEB_CANNOT))]


# ---- the gaps, as they fail today ----------------------------------------------------------------------
# ---- the suite fails when the platform's path is wrong ------------------------------------------------------
class Broken(MemoryDriver):
    """The memory driver with one defect switched on, as a platform's listener might have it."""

    defect = ""

    async def submit(self, intent: Any, user: str, *, delivery: str | None = None,
                     where: ThreadRef | None = None) -> tuple[Told, IntentResult]:
        if self.defect == "forgets_the_delivery_id":
            delivery = None
        if self.defect == "acts_as_the_owner" and isinstance(intent, Click):
            user = self.people[0]  # reads the actor from the card, not from the click
        if self.defect == "replies_outside_the_thread" and isinstance(intent, Said) and where is not None:
            where = ThreadRef(where.platform, where.channel, "")  # the channel, not the run's thread
        if self.defect == "forms_lose_their_words" and isinstance(intent, Click) and intent.text is not None:
            intent = Click(intent.action_id)
        if self.defect == "stop_only_interrupts" and isinstance(intent, Click) and verb_of(intent.action_id) == "stop":
            intent = Interrupt(decode(intent.action_id).run_id)
        before = len(self.surface.notices_for(user))
        told, result = await super().submit(intent, user, delivery=delivery, where=where)
        lines = told.lines
        if self.defect == "drops_notices":
            lines = tuple(line for line in lines if line not in self.surface.notices_for(user)[before:])
        if self.defect == "quiet_on_late_clicks" and result.duplicate and not result.ok:
            lines = ()
        return Told(lines, told.form), result

    async def press_id(self, thread: ThreadRef, action_id: str, user: str) -> Told:
        if self.defect == "routes_only_its_own_ids" and not action_id.startswith("fl1:"):
            return Told()  # no listener took it
        return await super().press_id(thread, action_id, user)


# defect -> the checks it breaks (exactly those)
DEFECTS = {
    "forgets_the_delivery_id": {"the_same_delivery_twice_acts_once_and_says_nothing_new"},
    "acts_as_the_owner": {"an_answer_the_policy_refuses_is_told_why_and_changes_nothing"},
    "drops_notices": {"a_start_the_policy_refuses_is_told_why_and_leaves_no_run",
                      "an_answer_the_policy_refuses_is_told_why_and_changes_nothing"},
    "quiet_on_late_clicks": {"a_click_on_a_settled_card_says_who_settled_it"},
    "routes_only_its_own_ids": {FOREIGN},
    "replies_outside_the_thread": {"a_plain_reply_in_the_thread_is_inbox_mail", "a_keyed_reply_answers_that_card"},
    "forms_lose_their_words": {"a_words_button_opens_a_form_whose_submission_answers"},
    "stop_only_interrupts": {"stop_ends_the_run"},
}


@pytest.mark.parametrize("defect", sorted(DEFECTS))
async def test_the_suite_names_the_check_a_defect_breaks(defect: str, tmp_path: Path) -> None:
    async def broken(kit: QuestionRuns, root: Path) -> DoorDriver:
        driver = Broken(kit, root)
        driver.defect = defect
        return driver

    with pytest.raises(DoorConformanceError) as caught:
        await run_door_conformance(factory(broken, tmp_path), check_timeout=1.5)
    assert set(caught.value.failures) == DEFECTS[defect], str(caught.value)
    assert all(f"FAILED {name}: " in str(caught.value) for name in DEFECTS[defect])


async def test_unknown_checks_are_refused(tmp_path: Path) -> None:
    made: list[DoorDriver] = []

    async def counted(kit: QuestionRuns, root: Path) -> DoorDriver:
        made.append(driver := MemoryDriver(kit, root))
        return driver

    with pytest.raises(ValueError, match="unknown checks"):
        await run_door_conformance(factory(counted, tmp_path), only={"no_such_check"})
    assert not made  # refused before any bot was built
