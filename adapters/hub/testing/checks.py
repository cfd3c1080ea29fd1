"""The checks of `run_door_conformance`, one function each, in the order they run (`DOOR_CHECKS`).

Each gets a fresh driver (its own bot, hub and run side) and the QuestionRuns its hub builds runs with;
it passes by returning, fails by raising AssertionError with a sentence saying what the person saw,
or raises `Skip` when its platform cannot play it. "Changes nothing" is read where it would show: the
run side received no input, the hub still takes an answer on the card, the run is still going.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from adapters.hub.cards import CardProblem
from adapters.hub.routing import NOT_MINE
from adapters.hub.testing.driver import DoorDriver, Shown, Skip, Told
from adapters.hub.testing.runs import OPTIONS, QUESTION, QuestionRun, QuestionRuns
from adapters.ids import IdError, decode
from adapters.platform import ThreadRef
from adapters.state.base import ChannelPolicy
from adapters.transport.intents import Op

__all__ = ["DOOR_CHECKS", "DoorCheck"]

DoorCheck = Callable[[DoorDriver, QuestionRuns], Awaitable[None]]

TASK = "tidy the indentation"
KEY = "q1"  # the run's first question, as people name it ("q1: …")
MAIL = "also keep the line length under 100"
WORDS = "two spaces, like the rest"
# What the door answers a delivery it has handled before (door.py): the only line a replay may show.
REPLAYED = "Already handled."
# A click id of this codec's grammar that it never produced (an "ans" without its option).
FORGED = "fl1:ans:{run_id}:{card_id}"
# A click id from somewhere else entirely: another app's button, or an older version's.
FOREIGN = "otherapp:approve:{run_id}"


# ---- helpers ---------------------------------------------------------------------------------------
def expect(ok: bool, why: str) -> None:
    if not ok:
        raise AssertionError(why)


def flat(text: str) -> str:
    return " ".join(text.split())


def said(told: Told, needle: str) -> bool:
    return any(flat(needle) in flat(line) for line in told.lines)


def button(card: Shown, verb: str, option: int | None = None) -> int:
    """The index of the card's button with this verb (and option)."""
    for i, (_label, action_id) in enumerate(card.buttons):
        try:
            action = decode(action_id)
        except IdError:
            continue
        if action.verb == verb and (option is None or action.option == option):
            return i
    raise AssertionError(f"the card shows no {verb!r} button{'' if option is None else f' #{option}'}: "
                         f"{[label for label, _ in card.buttons]}")


def card_id_of(card: Shown) -> str:
    return decode(card.buttons[button(card, "ans", 0)][1]).card_id


@dataclass
class Begun:
    """A run started by people[0], its first question open on the platform."""

    owner: str
    thread: ThreadRef
    run_id: str
    run: QuestionRun
    card: Shown  # q1 as it first showed, with its buttons

    @property
    def card_id(self) -> str:
        return card_id_of(self.card)


async def begin(driver: DoorDriver, runs: QuestionRuns) -> Begun:
    owner = driver.people[0]
    started = await driver.start(TASK, owner)
    expect(started.thread is not None, f"starting a run showed no thread; {owner} was told {started.told.lines}")
    assert started.thread is not None
    run_id = driver.hub.query.run_in(started.thread)
    expect(run_id is not None, f"the thread the platform showed ({started.thread}) holds no run")
    assert run_id is not None
    run = await runs.of(run_id)
    card = await driver.card(started.thread, KEY)
    return Begun(owner, started.thread, run_id, run, card)


def other(driver: DoorDriver, why: str) -> str:
    if len(driver.people) < 2:
        raise Skip(f"one person uses this platform: {why}")
    return driver.people[1]


async def heard(b: Begun, runs: QuestionRuns) -> list[tuple[str, str]]:
    return await runs.until(lambda: list(b.run.heard), f"the answer reaching run {b.run_id}'s question")


def unchanged(driver: DoorDriver, b: Begun, what: str) -> None:
    """Nothing reached the run, its question still takes an answer, it is still going."""
    expect(not b.run.intents, f"{what} reached the run: {[(i.op.value, i.text) for i in b.run.intents]}")
    expect(not b.run.heard, f"{what} settled the question: {b.run.heard}")
    problem, message = driver.hub.query.card_state(b.run_id, b.card_id)
    expect(problem is CardProblem.NONE, f"after {what} the card no longer takes an answer ({message})")
    expect(driver.hub.query.is_live(b.run_id), f"after {what} run {b.run_id} is not going")


async def settled_as(driver: DoorDriver, b: Begun, user: str, answer: str) -> None:
    """The card shows, in the thread, that `user` answered it with `answer`."""
    shown = await driver.card(b.thread, KEY, settled=True)
    who = driver.hub.query.display(user)
    expect(f"Answered by {who}" in flat(shown.text) and flat(answer) in flat(shown.text),
           f"the settled card does not say it was answered by {who} with {answer!r}: {shown.text!r}")


# ---- the checks -------------------------------------------------------------------------------------
async def a_start_makes_a_run_owned_by_the_person_in_that_thread(driver: DoorDriver, runs: QuestionRuns) -> None:
    owner = driver.people[0]
    started = await driver.start(TASK, owner)
    expect(started.thread is not None, f"starting a run showed no thread; {owner} was told {started.told.lines}")
    assert started.thread is not None
    expect(started.thread.platform == driver.platform,
           f"the run's thread {started.thread} is not one of {driver.platform}'s")
    run_id = driver.hub.query.run_in(started.thread)
    record = driver.hub.query.run(run_id) if run_id else None
    expect(record is not None, f"the thread the platform showed ({started.thread}) holds no run")
    assert record is not None and run_id is not None
    expect(record.owner == owner, f"run {run_id} is owned by {record.owner!r}, not by {owner!r} who started it")
    expect(record.thread == started.thread, f"run {run_id} lives in {record.thread}, not in {started.thread}")
    expect(record.task == TASK, f"run {run_id} has the task {record.task!r}, not {TASK!r}")
    run = await runs.of(run_id)
    expect(run.task == TASK, f"the run side was given {run.task!r}, not {TASK!r}")
    expect(len(runs.runs) == 1, f"one start made {len(runs.runs)} runs")
    card = await driver.card(started.thread, KEY)  # the run speaks in that thread
    expect(QUESTION in card.text, f"the run's question card does not ask {QUESTION!r}: {card.text!r}")
    labels = [label for label, _ in card.buttons]
    expect(all(o in labels for o in OPTIONS), f"the card's buttons {labels} lack the options {OPTIONS}")


async def an_option_click_answers_the_card_as_that_person_once(driver: DoorDriver, runs: QuestionRuns) -> None:
    b = await begin(driver, runs)
    told = await driver.press(b.card, button(b.card, "ans", 1), b.owner)
    expect(told.form is None, f"an option click opened a form: {told.form}")
    got = await heard(b, runs)
    expect(got == [("answered", OPTIONS[1])], f"the run's question returned {got}, not the option {OPTIONS[1]!r}")
    answers = b.run.ops(Op.ANSWER)
    expect(len(answers) == 1, f"the run received {len(answers)} answers for one click")
    expect(answers[0].user == b.owner, f"the answer reached the run as {answers[0].user!r}, not {b.owner!r}")
    await settled_as(driver, b, b.owner, OPTIONS[1])


async def the_same_delivery_twice_acts_once_and_says_nothing_new(driver: DoorDriver, runs: QuestionRuns) -> None:
    b = await begin(driver, runs)
    index = button(b.card, "ans", 0)
    first = await driver.press(b.card, index, b.owner, delivery="retried")
    await heard(b, runs)
    second = await driver.press(b.card, index, b.owner, delivery="retried")
    answers = b.run.ops(Op.ANSWER)
    expect(len(answers) == 1 and len(b.run.heard) == 1,
           f"one click delivered twice reached the run {len(answers)} times (heard {b.run.heard})")
    new = [line for line in second.lines if line not in first.lines and flat(line) != REPLAYED]
    expect(not new, f"the second delivery told {b.owner} something new: {new}")
    await settled_as(driver, b, b.owner, OPTIONS[0])


async def a_click_on_a_settled_card_says_who_settled_it(driver: DoorDriver, runs: QuestionRuns) -> None:
    b = await begin(driver, runs)
    await driver.press(b.card, button(b.card, "ans", 0), b.owner)
    await heard(b, runs)
    late = driver.people[1] if len(driver.people) > 1 else b.owner  # (their screen still shows the buttons)
    told = await driver.press(b.card, button(b.card, "ans", 1), late)
    who = driver.hub.query.display(b.owner)
    expect(said(told, f"already settled (answered by {who}"),
           f"a late click told {late} {list(told.lines)}, not that the card was already settled (answered by {who})")
    expect(len(b.run.ops(Op.ANSWER)) == 1 and b.run.heard == [("answered", OPTIONS[0])],
           f"the late click reached the run: {b.run.heard}")


async def a_forged_id_is_not_mine_and_changes_nothing(driver: DoorDriver, runs: QuestionRuns) -> None:
    b = await begin(driver, runs)
    told = await driver.press_id(b.thread, FORGED.format(run_id=b.run_id, card_id=b.card_id), b.owner)
    expect(said(told, NOT_MINE), f"a forged button id told {b.owner} {list(told.lines)}, not {NOT_MINE!r}…")
    unchanged(driver, b, "a forged button id")


async def a_foreign_id_is_not_mine_and_changes_nothing(driver: DoorDriver, runs: QuestionRuns) -> None:
    b = await begin(driver, runs)
    told = await driver.press_id(b.thread, FOREIGN.format(run_id=b.run_id), b.owner)
    expect(said(told, NOT_MINE), f"another app's button id told {b.owner} {list(told.lines)}, not {NOT_MINE!r}…")
    unchanged(driver, b, "another app's button id")


async def a_start_the_policy_refuses_is_told_why_and_leaves_no_run(driver: DoorDriver, runs: QuestionRuns) -> None:
    person = driver.people[0]
    driver.hub.store.set_channel_policy(driver.channel, ChannelPolicy(starters=set()))
    reason = driver.hub.query.may(person, "start", channel=driver.channel).reason
    started = await driver.start(TASK, person)
    expect(said(started.told, reason), f"a refused start told {person} {list(started.told.lines)}, not why "
           f"({reason!r})")
    expect(started.thread is None or driver.hub.query.run_in(started.thread) is None,
           f"a refused start left a run in {started.thread}")
    expect(not driver.hub.query.runs(live_only=False) and not runs.runs,
           f"a refused start made a run: {[r.run_id for r in driver.hub.query.runs(live_only=False)]}")


async def an_answer_the_policy_refuses_is_told_why_and_changes_nothing(driver: DoorDriver,
                                                                        runs: QuestionRuns) -> None:
    outsider = other(driver, "the run's owner, who may always answer")
    b = await begin(driver, runs)
    driver.hub.store.set_channel_policy(f"{b.thread.platform}:{b.thread.channel}", ChannelPolicy(responders=set()))
    reason = driver.hub.query.may(outsider, "answer", run_id=b.run_id).reason
    told = await driver.press(b.card, button(b.card, "ans", 0), outsider)
    expect(said(told, reason), f"a refused answer told {outsider} {list(told.lines)}, not why ({reason!r})")
    unchanged(driver, b, "a refused answer")


async def a_plain_reply_in_the_thread_is_inbox_mail(driver: DoorDriver, runs: QuestionRuns) -> None:
    b = await begin(driver, runs)
    await driver.say(b.thread, MAIL, b.owner)
    mail = await runs.until(lambda: b.run.mail, f"mail reaching run {b.run_id}'s inbox")
    expect(mail == [MAIL], f"the run's inbox holds {mail}, not [{MAIL!r}]")
    sends = b.run.ops(Op.SEND)
    expect(len(sends) == 1 and sends[0].user == b.owner, f"the mail reached the run as {sends}")
    expect(not b.run.heard and not b.run.ops(Op.ANSWER), f"a plain reply answered the question: {b.run.heard}")


async def a_keyed_reply_answers_that_card(driver: DoorDriver, runs: QuestionRuns) -> None:
    b = await begin(driver, runs)
    await driver.say(b.thread, f"{KEY}: {WORDS}", b.owner)
    got = await heard(b, runs)
    expect(got == [("answered", WORDS)], f"`{KEY}: {WORDS}` reached the question as {got}")
    expect(not b.run.mail, f"`{KEY}: …` also went to the inbox: {b.run.mail}")
    await settled_as(driver, b, b.owner, WORDS)


async def a_words_button_opens_a_form_whose_submission_answers(driver: DoorDriver, runs: QuestionRuns) -> None:
    b = await begin(driver, runs)
    told = await driver.press(b.card, button(b.card, "txt"), b.owner)
    expect(told.form is not None, f"the words button opened no form; {b.owner} was told {list(told.lines)}")
    assert told.form is not None
    expect(not b.run.intents, f"opening the form reached the run: {b.run.intents}")
    await driver.submit_form(told.form, WORDS, b.owner)
    got = await heard(b, runs)
    expect(got == [("answered", WORDS)], f"the form's words reached the question as {got}")
    await settled_as(driver, b, b.owner, WORDS)


async def stop_ends_the_run(driver: DoorDriver, runs: QuestionRuns) -> None:
    b = await begin(driver, runs)
    told = await driver.stop(b.thread, b.owner)
    ended = await runs.until(lambda: b.run.ended, f"run {b.run_id} ending; {b.owner} was told {list(told.lines)}")
    expect(ended == "stopped", f"run {b.run_id} ended {ended!r}, not stopped")
    expect(len(b.run.ops(Op.STOP)) == 1, f"the run received {len(b.run.ops(Op.STOP))} stops")
    await driver.hub.query.wait(b.run_id)
    record = driver.hub.query.run(b.run_id)
    expect(record is not None and record.status == "stopped", f"run {b.run_id} is {record and record.status}")
    closed = await driver.card(b.thread, KEY, settled=True)  # its open question closes with it
    expect(not closed.buttons, f"the stopped run's card still shows buttons: {closed.buttons}")


DOOR_CHECKS: dict[str, DoorCheck] = {check.__name__: check for check in (
    a_start_makes_a_run_owned_by_the_person_in_that_thread,
    an_option_click_answers_the_card_as_that_person_once,
    the_same_delivery_twice_acts_once_and_says_nothing_new,
    a_click_on_a_settled_card_says_who_settled_it,
    a_forged_id_is_not_mine_and_changes_nothing,
    a_foreign_id_is_not_mine_and_changes_nothing,
    a_start_the_policy_refuses_is_told_why_and_leaves_no_run,
    an_answer_the_policy_refuses_is_told_why_and_changes_nothing,
    a_plain_reply_in_the_thread_is_inbox_mail,
    a_keyed_reply_answers_that_card,
    a_words_button_opens_a_form_whose_submission_answers,
    stop_ends_the_run,
)}
