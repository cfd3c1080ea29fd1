"""Slack payloads whose fields are not what Slack sends (a number, an object, a null where a string
belongs) are ignored or refused with one log line, and never reach the hub.

The real AsyncApp over Socket Mode against the Slack double. The hub's intents are recorded (not
run) so a test sees exactly which deliveries reached it; a well-formed delivery of the same kind is
the control that the path itself works.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from adapters.hub import IntentResult
from adapters.platform import ThreadRef
from adapters.slack.inbound import PayloadError, text_field
from adapters.state import RunRecord
from tests.support.slack_double import SlackDouble
from tests.support.slack_support import C1, Bot, slack_bot
from tests.support.waiting import until

ROOT_TS = "1700000000.000100"
THREAD = ThreadRef("slack", C1, ROOT_TS)
BAD_VALUES = [123, 1.5, True, None, {"id": "UALICE"}, ["UALICE"]]
INTENTS = ("submit",)  # the door: nothing malformed may reach it
# What each intent reaching the door is called here (the hub's verbs before the door).
CALLED = {"Said": "said", "Start": "start", "Interrupt": "interrupt", "Stop": "stop", "Click": "handle_action",
          "Follow": "follow", "Unfollow": "unfollow"}


@dataclass
class Seen:
    """What reached the hub, and what the bridge logged: each change sets `changed`."""

    changed: asyncio.Event = field(default_factory=asyncio.Event)
    intents: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    lines: list[logging.LogRecord] = field(default_factory=list)

    def about(self, needle: str) -> list[logging.LogRecord]:
        return [r for r in self.lines if needle in r.getMessage()]

    def warnings(self) -> list[str]:
        """The bridge's warnings: each refused delivery must leave exactly one ("not understood")."""
        return [r.getMessage() for r in self.lines if r.levelno >= logging.WARNING]

    async def refused(self, delivery: Awaitable[Any]) -> None:
        """Deliver something broken; wait for its one line (Bolt's own parsing, or ours, refused it)."""
        before = len(self.warnings())
        await delivery
        await until(self.changed, lambda: len(self.warnings()) > before, timeout=30)

    def called(self, name: str) -> list[tuple[Any, ...]]:
        return [args for n, args in self.intents if n == name]


class _Tap(logging.Handler):
    def __init__(self, seen: Seen, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(logging.DEBUG)
        self.seen, self.loop = seen, loop

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.lines.append(record)
        self.loop.call_soon_threadsafe(self.seen.changed.set)


@pytest.fixture
def logs() -> Iterator[logging.Logger]:
    logger = logging.getLogger("adapters.slack")
    old = logger.level
    logger.setLevel(logging.DEBUG)
    yield logger
    logger.setLevel(old)


@dataclass
class Rig:
    double: SlackDouble
    bot: Bot
    seen: Seen

    async def wait(self, probe: Callable[[], Any]) -> Any:
        return await until(self.seen.changed, probe, timeout=30)


@pytest.fixture
async def rig(tmp_path: Path, logs: logging.Logger) -> AsyncIterator[Rig]:
    seen = Seen()
    tap = _Tap(seen, asyncio.get_running_loop())
    logs.addHandler(tap)
    try:
        async with SlackDouble() as double, slack_bot(tmp_path, None, tmp_path, double) as bot:
            hub = bot.hub
            # A run asleep in a thread (its cards still answer), so a person's reply there is for it.
            hub.store.save_run(RunRecord("r0000001", THREAD, "UALICE", "an old task", "waiting", str(tmp_path),
                                         str(tmp_path / "r0000001")))
            hub.store.bind_thread(THREAD, "r0000001")
            for name in INTENTS:
                setattr(hub, name, _recorder(seen, name))
            yield Rig(double, bot, seen)
    finally:
        logs.removeHandler(tap)


def _recorder(seen: Seen, name: str) -> Callable[..., Any]:
    async def intent(*args: Any, **kwargs: Any) -> IntentResult:
        kind = type(args[0]).__name__ if args else name
        if kind == "Said":  # as the hub's `said(thread, user, text)` took it
            args = (kwargs.get("where"), args[1], args[0].text)
        seen.intents.append((CALLED.get(kind, kind), args))
        seen.changed.set()
        return IntentResult(True, "noted", "r0000001", duplicate=True)  # (a replay: nothing more is said)
    return intent


def tracebacks(seen: Seen) -> list[str]:
    return [r.getMessage() for r in seen.lines if r.exc_info]


# ---- message events --------------------------------------------------------------------------------
def a_reply(at: str, **over: Any) -> dict[str, Any]:
    event = {"type": "message", "channel": C1, "user": "UALICE", "text": "note this", "ts": at,
             "thread_ts": ROOT_TS, "event_ts": at, "channel_type": "channel"}
    return {**event, **over}


def not_understood(seen: Seen, count: int) -> None:
    lines = seen.warnings()
    assert len(lines) == count and all("not understood" in m for m in lines), lines
    assert tracebacks(seen) == []


@pytest.mark.parametrize("key", ["user", "text", "ts", "thread_ts", "channel"])
async def test_a_message_whose_field_is_not_a_string_never_reaches_the_hub(rig: Rig, key: str) -> None:
    for i, bad in enumerate(BAD_VALUES):
        await rig.seen.refused(rig.double.event(a_reply(f"1700000001.{i:06d}", **{key: bad})))
    await rig.double.event(a_reply("1700000002.000001"))  # the control: a well-formed reply gets there
    await rig.wait(lambda: rig.seen.called("said"))
    [(thread, user, text)] = rig.seen.called("said")
    assert (thread, user, text) == (THREAD, "UALICE", "note this")
    not_understood(rig.seen, len(BAD_VALUES))


async def test_a_message_with_a_subtype_that_is_not_a_string_is_ignored(rig: Rig) -> None:
    await rig.seen.refused(rig.double.event(a_reply("1700000001.000001", subtype={"not": "hashable"})))
    await rig.double.event(a_reply("1700000002.000001"))
    await rig.wait(lambda: rig.seen.called("said"))
    assert len(rig.seen.called("said")) == 1
    not_understood(rig.seen, 1)


# ---- the other events ------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["user", "text", "ts", "channel", "thread_ts"])
async def test_a_mention_whose_field_is_not_a_string_starts_nothing(rig: Rig, key: str) -> None:
    for i, bad in enumerate(BAD_VALUES):
        mention = {"type": "app_mention", "channel": C1, "user": "UALICE", "text": "<@UBOT> build it",
                   "ts": f"1700000003.{i:06d}", key: bad}
        await rig.seen.refused(rig.double.event(mention))
    assert rig.seen.intents == [] and len(rig.bot.store.list_runs()) == 1
    not_understood(rig.seen, len(BAD_VALUES))


@pytest.mark.parametrize("key", ["user", "channel", "thread_ts"])
async def test_a_stop_press_whose_field_is_not_a_string_interrupts_nothing(rig: Rig, key: str) -> None:
    bad_values = [v for v in BAD_VALUES if not (key == "user" and v is None)]  # (no user: allowed)
    for i, bad in enumerate(bad_values):
        stopped = {"type": "agent_session_stopped", "channel": C1, "thread_ts": ROOT_TS, "user": "UALICE",
                   "event_ts": f"1700000004.{i:06d}", key: bad}
        await rig.seen.refused(rig.double.event(stopped))
    assert rig.seen.intents == []
    not_understood(rig.seen, len(bad_values))


# ---- slash commands, clicks, forms, shortcuts ------------------------------------------------------
@pytest.mark.parametrize("key", ["user_id", "channel_id", "text", "user_name"])
async def test_a_slash_command_whose_field_is_not_a_string_is_refused(rig: Rig, key: str) -> None:
    for bad in BAD_VALUES:
        if bad is None and key in ("text", "user_name"):
            continue  # optional: a null is as good as absent
        payload = rig.double.slash_payload("/flower", "build it", user="UALICE", channel=C1)
        ack = await rig.double.send("slash_commands", {**payload, key: bad})
        assert ack is not None and "incomplete" in ack["text"], (key, bad, ack)
    assert rig.seen.intents == [] and tracebacks(rig.seen) == []


@pytest.mark.parametrize("where", [("user", "id"), ("user", "name"), ("channel", "id"), ("actions", 0, "value"),
                                   ("container", "thread_ts")], ids=lambda w: ".".join(map(str, w)))
async def test_a_click_whose_field_is_not_a_string_reaches_nothing(rig: Rig, where: tuple[Any, ...]) -> None:
    for i, bad in enumerate([123, {"x": 1}, ["x"]]):
        body = {"type": "block_actions", "user": {"id": "UALICE", "name": "alice"}, "trigger_id": f"tr{i}",
                "response_url": rig.double._response_url(), "channel": {"id": C1},
                "container": {"type": "message", "message_ts": "1700000000.000200", "channel_id": C1,
                              "thread_ts": ROOT_TS},
                "actions": [{"action_id": "fl1:ans:r0000001:1-q1:0", "type": "button", "value": "0",
                             "action_ts": f"1700000005.{i:06d}"}]}
        inner: Any = body
        for key in where[:-1]:
            inner = inner[key]
        inner[where[-1]] = bad
        await rig.seen.refused(rig.double.send("interactive", body))
    await rig.double.wait_for(lambda d: len(d.responses) >= 3)
    assert all("could not read that click" in r["text"] for r in rig.double.responses)
    assert rig.seen.intents == []
    not_understood(rig.seen, 3)


@pytest.mark.parametrize("callback", ["flower_interrupt", "flower_unfollow"])
async def test_a_shortcut_whose_user_name_is_not_a_string_is_explained(rig: Rig, callback: str) -> None:
    msg = rig.double.person_says(C1, "a reply", user="UALICE", thread_ts=ROOT_TS)
    body = {"type": "message_action", "callback_id": callback, "trigger_id": "tr-s",
            "response_url": rig.double._response_url(), "user": {"id": "UALICE", "name": 42},
            "channel": {"id": C1}, "message": msg.as_payload(), "team": {"id": "T1"}, "token": "t"}
    await rig.double.send("interactive", body)
    await rig.wait(lambda: rig.seen.about("shortcut payload not understood"))
    await rig.double.wait_for(lambda d: d.responses)
    assert "could not read that shortcut" in rig.double.responses[0]["text"]
    assert rig.seen.intents == [] and tracebacks(rig.seen) == []


async def test_a_form_whose_user_is_not_a_string_is_refused(rig: Rig) -> None:
    meta = '{"a": "fl1:txt:r0000001:1-q1", "c": "C0000001", "t": "1700000000.000100"}'
    body = {"type": "view_submission", "user": {"id": 7}, "trigger_id": "tr-v",
            "view": {"id": "V1", "type": "modal", "callback_id": "flower_input", "private_metadata": meta,
                     "state": {"values": {}}, "hash": "h"}}
    ack = await rig.double.send("interactive", body)
    assert ack is not None and ack["response_action"] == "errors"
    assert rig.seen.intents == [] and tracebacks(rig.seen) == []


# ---- the reader itself (a pure function) ------------------------------------------------------------
@pytest.mark.parametrize("value", [123, 0, 1.5, True, {"id": "U1"}, ["U1"]])
def test_text_field_never_turns_a_non_string_into_text(value: Any) -> None:
    with pytest.raises(PayloadError, match="not text"):
        text_field({"user": value}, "user")
    with pytest.raises(PayloadError, match="not text"):
        text_field({"user": value}, "user", required=False)


def test_text_field_null_is_absent_only_where_slack_sends_null() -> None:
    assert text_field({"value": None}, "value", required=False) == ""  # an empty form field
    with pytest.raises(PayloadError, match="is null"):
        text_field({"text": None}, "text", required=False, null_ok=False)
    with pytest.raises(PayloadError, match="has no user"):
        text_field({"user": None}, "user")
    assert text_field({"a": {"b": "x"}}, "a", "b") == "x" and text_field({}, "a", "b", required=False) == ""


# ---- envelopes whose payload is not an object ----------------------------------------------------------
@pytest.mark.parametrize("kind", ["events_api", "interactive", "slash_commands"])
@pytest.mark.parametrize("payload", [None, "text", 42, ["a"], True], ids=["null", "string", "number", "list", "bool"])
async def test_an_envelope_whose_payload_is_not_an_object_is_acked_with_one_line(rig: Rig, kind: str,
                                                                                 payload: Any) -> None:
    """Slack sends an object; anything else is acked (Slack would otherwise send it again), logged once, and
    dropped; the connection goes on serving."""
    ack = await rig.double.send(kind, payload, envelope_id=f"env-bad-{kind}")  # waits for the ack
    assert ack is None and f"env-bad-{kind}" in rig.double.acks
    await rig.wait(lambda: rig.seen.warnings())
    [line] = rig.seen.warnings()
    assert "not understood" in line and kind in line, line
    assert rig.seen.intents == [] and tracebacks(rig.seen) == []
    await rig.double.event(a_reply("1700000002.000001"))  # the control: the next delivery is served
    await rig.wait(lambda: rig.seen.called("said"))


@pytest.mark.parametrize("envelope", [{"type": "events_api"}, {"payload": {"event": {}}}, {"type": 7, "payload": {}}],
                         ids=["no-payload", "no-type", "numeric-type"])
async def test_an_envelope_missing_its_type_or_payload_is_acked_with_one_line(rig: Rig,
                                                                              envelope: dict[str, Any]) -> None:
    await rig.double.connected()
    await rig.double._sockets[-1].send_str(json.dumps({"envelope_id": "env-bare", **envelope}))
    await rig.double.wait_for(lambda d: "env-bare" in d.acks, timeout=30)
    await rig.wait(lambda: rig.seen.warnings())
    [line] = rig.seen.warnings()
    assert "not understood" in line and tracebacks(rig.seen) == [] and rig.seen.intents == []
