"""Door drivers for `run_door_conformance`: a person on each platform the project ships, through its real
inbound path, and what that person was shown.

```
driver   a person's doing goes through                      "handled" is known from
memory   hub.submit itself (the hub's own surface)          the call returning
Slack    Socket Mode envelopes: Slack double -> slack-bolt  the ack, then Bolt's listener-completion hook
Discord  gateway dispatches: Discord double -> discord.py   the bridge's listener returning (or declining a
                                                            replay); else Discord's 3 s passing unanswered
web      HTTP requests to the page's API                    the HTTP answer
```
Each reads what a person sees on its platform: the Slack double's messages, ephemerals and response_url
posts; the Discord double's messages, interaction replies and direct messages; the web page's own
thread store, its HTTP answers as the page shows them (`said()` in app.js) and the notices its page gets;
the memory surface's messages and notices. Waits are bounded and re-checked on each platform's change
signal, never slept.
"""

from __future__ import annotations

import asyncio
import copy
import html
import itertools
import uuid
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import discord
from slack_bolt.listener.async_listener_completion_handler import AsyncListenerCompletionHandler
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from adapters.discord_bridge import DiscordFrontend
from adapters.hub import Click, Hub, HubSettings, IntentResult, Said, Start
from adapters.hub.testing import OpenForm, QuestionRuns, Shown, Started, Told
from adapters.ids import IdError, decode
from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.slack import SlackFrontend
from adapters.state import MemoryStateStore
from adapters.web import WebFrontend
from tests.support.discord_double import DiscordDouble
from tests.support.discord_interactions import DEADLINE_S, Ix
from tests.support.discord_payloads import Person
from tests.support.discord_support import FAST_LIMITS, settings
from tests.support.hub_support import QUICK
from tests.support.slack_double import Msg, SlackDouble
from tests.support.slack_support import settings_for
from tests.support.waiting import until

__all__ = ["INTERACTION_FAILED", "DiscordDriver", "MemoryDriver", "SlackDriver", "WebDriver", "card_key", "verb_of"]

WAIT_S = 10.0  # the longest any one step may take to show (the suite's per-check deadline bounds it all)
# What Discord's own client shows a person whose interaction nobody answered within its deadline.
INTERACTION_FAILED = "This interaction failed"
T = TypeVar("T")


async def within(changed: asyncio.Event, probe: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    """`probe()` once truthy (re-read each time `changed` is set); AssertionError naming `what` if not in time."""
    try:
        return await until(changed, probe, timeout)
    except TimeoutError:
        raise AssertionError(f"{what}: not within {timeout:g}s") from None


async def shows(wait: Awaitable[T], what: str) -> T:
    """A double's own bounded wait, failing as a check fails: AssertionError naming `what`."""
    try:
        return await wait
    except TimeoutError:
        raise AssertionError(f"{what}: not within {WAIT_S:g}s") from None


def door_hub(surfaces: Any, root: Path, kit: QuestionRuns) -> Hub:
    """A hub on a fresh store whose runs `kit` builds; prose goes out at once (QUICK)."""
    return Hub(surfaces, MemoryStateStore(), HubSettings(root=root, view=QUICK), kit=kit)


def card_key(action_id: str) -> str:
    """The key people use for a card ("q1") from one of its buttons' ids ("" for any other button)."""
    try:
        action = decode(action_id)
    except IdError:
        return ""
    return action.card_id.split("-", 1)[-1] if action.card_id else ""


def verb_of(action_id: str) -> str:
    try:
        return decode(action_id).verb
    except IdError:
        return ""


# ---- memory: the hub's own surface -----------------------------------------------------------------------
class MemoryDriver:
    """The memory surface is the hub's own platform: a person's intents are submitted as a platform
    submits them, and what they are shown is the result's `to_show` plus the surface's notices."""

    platform = "memory"
    channel = "memory:C1"
    people: Sequence[str] = ("ana", "bea")

    def __init__(self, kit: QuestionRuns, root: Path) -> None:
        self.surface = MemorySurface()
        self._hub = door_hub(self.surface, root, kit)
        self.changed = asyncio.Event()
        self.surface.on_call = lambda call: self.changed.set()
        self._threads = itertools.count(1)
        self._said = itertools.count(1)

    @property
    def hub(self) -> Hub:
        return self._hub

    async def submit(self, intent: Any, user: str, *, delivery: str | None = None,
                     where: ThreadRef | None = None) -> tuple[Told, IntentResult]:
        before = len(self.surface.notices_for(user))
        result = await self.hub.submit(intent, user, delivery_id=delivery, where=where)
        lines = self.surface.notices_for(user)[before:]
        shown = result.to_show(quiet_when_ok=True)
        if shown is not None:
            lines.append(shown)
        form = None
        if result.form is not None and isinstance(intent, Click):
            form = OpenForm(result.form.prompt, (intent.action_id, where))
        return Told(tuple(lines), form), result

    async def start(self, task: str, user: str) -> Started:
        thread = ThreadRef(self.platform, "C1", f"t{next(self._threads)}")
        told, result = await self.submit(Start(task), user, where=thread)
        if not result.ok:
            return Started(None, told)
        await within(self.changed, lambda: self.surface.thread(thread), f"the first message in {thread}")
        return Started(thread, told)

    def _find(self, thread: ThreadRef, key: str, settled: bool) -> Shown | None:
        for posted in self.surface.messages.values():
            msg = posted.msg
            if posted.thread == thread and msg.kind == "ask" and msg.key.split("-", 1)[-1] == key \
                    and bool(msg.buttons) != settled:
                return Shown("\n".join([msg.title, msg.text]), tuple((b.label, b.action_id) for b in msg.buttons),
                             thread)
        return None

    async def card(self, thread: ThreadRef, key: str, *, settled: bool = False) -> Shown:
        shown: Shown = await within(self.changed, lambda: self._find(thread, key, settled),
                                    f"card {key} {'settled' if settled else 'open'} in {thread}")
        return shown

    async def press(self, shown: Shown, index: int, user: str, *, delivery: str | None = None) -> Told:
        thread = shown.handle if isinstance(shown.handle, ThreadRef) else None
        told, _ = await self.submit(Click(shown.buttons[index][1]), user, delivery=delivery, where=thread)
        return told

    async def press_id(self, thread: ThreadRef, action_id: str, user: str) -> Told:
        told, _ = await self.submit(Click(action_id), user, where=thread)
        return told

    async def submit_form(self, form: OpenForm, text: str, user: str) -> Told:
        handle = form.handle
        assert isinstance(handle, tuple)
        action_id, where = handle
        told, _ = await self.submit(Click(str(action_id), text), user, where=where)
        return told

    async def say(self, thread: ThreadRef, text: str, user: str) -> Told:
        told, _ = await self.submit(Said(text, origin=f"said{next(self._said)}"), user, where=thread)
        return told

    async def stop(self, thread: ThreadRef, user: str) -> Told:
        def stop_button() -> str | None:
            return next((b.action_id for p in self.surface.messages.values() if p.thread == thread
                         and p.msg.kind == "status" for b in p.msg.buttons if verb_of(b.action_id) == "stop"), None)
        stop: str = await within(self.changed, stop_button, "a Stop button on the status card")
        told, _ = await self.submit(Click(stop), user, where=thread)  # (this platform has no Stop form)
        return told

    async def close(self) -> None:
        await self.hub.close()


# ---- Slack: slack-bolt over Socket Mode, against the Slack double ---------------------------------------------
SLACK_CHANNEL = "C0000001"


class _Listened(AsyncListenerCompletionHandler):
    """Bolt calls this when a listener has finished (after its ack, with everything it said)."""

    def __init__(self, on_done: Callable[[], None]) -> None:
        self.on_done = on_done

    async def handle(self, request: AsyncBoltRequest, response: BoltResponse | None) -> None:
        self.on_done()


class SlackDriver:
    """The real SlackFrontend (AsyncApp over Socket Mode) on the Slack double; two people in one channel.
    Test code watches Bolt, never changes it: a middleware after the bot's dedupe counts the deliveries
    that reach a listener, Bolt's listener-completion hook counts those that finished."""

    platform = "slack"
    channel = f"slack:{SLACK_CHANNEL}"
    people: Sequence[str] = ("U0000ANA", "U0000BEA")

    def __init__(self, double: SlackDouble, frontend: SlackFrontend, hub: Hub) -> None:
        self.double, self.frontend, self._hub = double, frontend, hub
        self.entered = self.done = 0  # deliveries past the bot's dedupe / whose listener has finished
        self.changed = asyncio.Event()
        self._cards: dict[tuple[ThreadRef, str], str] = {}  # (thread, key) -> the card's message ts
        self._deliveries: dict[str, dict[str, Any]] = {}  # delivery name -> the payload Slack sent

    @classmethod
    async def open(cls, kit: QuestionRuns, root: Path) -> SlackDriver:
        double = await SlackDouble(names={"U0000ANA": "Ana", "U0000BEA": "Bea"}).start()
        frontend = SlackFrontend(settings_for(double))
        hub = door_hub(frontend.surface, root, kit)
        frontend.attach(hub)
        driver = cls(double, frontend, hub)
        frontend.app.middleware(driver._entering)  # after the bot's own dedupe middleware
        frontend.app.listener_runner.listener_completion_handler = _Listened(driver._listened)
        await frontend.start()
        return driver

    @property
    def hub(self) -> Hub:
        return self._hub

    async def _entering(self, body: dict[str, Any], next: Callable[[], Any]) -> BoltResponse | None:
        self.entered += 1
        result: BoltResponse | None = await next()
        return result

    def _listened(self) -> None:
        self.done += 1
        self.changed.set()

    async def deliver(self, kind: str, payload: dict[str, Any], user: str) -> Told:
        """One envelope to the bot; returns once it is handled, with what `user` alone was shown."""
        d = self.double
        ephemerals, responses, views = len(d.ephemerals_for(user)), len(d.responses), set(d.views)
        entered = self.entered
        ack = await d.send(kind, payload)
        if self.entered > entered:  # past the dedupe: a listener runs on after the ack
            await within(self.changed, lambda: self.done >= self.entered, f"Slack listener for a {kind} envelope")
        lines = [*d.ephemerals_for(user)[ephemerals:], *(str(r.get("text", "")) for r in d.responses[responses:])]
        if ack and ack.get("text"):
            lines.append(str(ack["text"]))
        opened = [vid for vid in d.views if vid not in views]
        form = OpenForm(str(d.views[opened[-1]].get("title", {}).get("text", "")), opened[-1]) if opened else None
        return Told(tuple(html.unescape(line) for line in lines), form)

    def thread(self, ts: str) -> ThreadRef:
        return ThreadRef(self.platform, SLACK_CHANNEL, ts)

    async def start(self, task: str, user: str) -> Started:
        before = {m.ts for m in self.double.roots(SLACK_CHANNEL)}
        told = await self.deliver("slash_commands", self.double.slash_payload("/flower", task, user=user,
                                                                               channel=SLACK_CHANNEL), user)
        new = [m for m in self.double.roots(SLACK_CHANNEL) if m.ts not in before]
        return Started(self.thread(new[-1].ts) if new else None, told)

    @staticmethod
    def shown(msg: Msg) -> Shown:
        parts = [msg.header(), msg.body()]
        return Shown(html.unescape("\n".join(p for p in parts if p)),
                     tuple((b["text"]["text"], b["action_id"]) for b in msg.buttons()), copy.deepcopy(msg))

    def _find(self, thread: ThreadRef, key: str, settled: bool) -> Shown | None:
        ts = self._cards.get((thread, key))
        if ts is None:
            ts = next((m.ts for m in self.double.thread(SLACK_CHANNEL, thread.thread)
                       if any(card_key(b["action_id"]) == key for b in m.buttons())), None)
            if ts is None:
                return None
            self._cards[(thread, key)] = ts
        msg = self.double.messages[(SLACK_CHANNEL, ts)]
        return self.shown(msg) if not msg.deleted and bool(msg.buttons()) != settled else None

    async def card(self, thread: ThreadRef, key: str, *, settled: bool = False) -> Shown:
        return await shows(self.double.wait_for(lambda d: self._find(thread, key, settled), WAIT_S),
                           f"card {key} {'settled' if settled else 'open'} in {thread}")

    async def press(self, shown: Shown, index: int, user: str, *, delivery: str | None = None) -> Told:
        payload = self._deliveries.get(delivery) if delivery else None
        if payload is None:
            msg = shown.handle
            assert isinstance(msg, Msg)
            payload = self.double.click_payload(msg, shown.buttons[index][1], user=user)
            if delivery:
                self._deliveries[delivery] = payload  # pressed again: Slack sends this very payload again
        return await self.deliver("interactive", payload, user)

    async def press_id(self, thread: ThreadRef, action_id: str, user: str) -> Told:
        old = copy.deepcopy(self.double.messages[(SLACK_CHANNEL, thread.thread)])  # a message showing that button
        old.blocks = [{"type": "actions", "elements": [{"type": "button", "action_id": action_id,
                                                        "text": {"type": "plain_text", "text": "Approve"}}]}]
        return await self.deliver("interactive", self.double.click_payload(old, action_id, user=user), user)

    async def submit_form(self, form: OpenForm, text: str, user: str) -> Told:
        return await self.deliver("interactive", self.double.submit_payload(str(form.handle), user=user, text=text),
                                  user)

    async def say(self, thread: ThreadRef, text: str, user: str) -> Told:
        msg = self.double.person_says(SLACK_CHANNEL, text, user=user, thread_ts=thread.thread)
        event = {"type": "message", "channel": SLACK_CHANNEL, "user": user, "text": text, "ts": msg.ts,
                 "event_ts": msg.ts, "channel_type": "channel", "thread_ts": thread.thread}
        return await self.deliver("events_api", self.double.event_payload(event), user)

    async def stop(self, thread: ThreadRef, user: str) -> Told:
        def status() -> Shown | None:  # the root is the status card; its buttons come with the run's first edit
            shown = self.shown(self.double.messages[(SLACK_CHANNEL, thread.thread)])
            return shown if any(verb_of(a) == "stop" for _, a in shown.buttons) else None
        card: Shown = await shows(self.double.wait_for(lambda d: status(), WAIT_S), "a Stop button on the status card")
        index = next(i for i, (_, a) in enumerate(card.buttons) if verb_of(a) == "stop")
        pressed = await self.press(card, index, user)
        if pressed.form is None:
            return pressed
        payload = self.double.submit_payload(str(pressed.form.handle), user=user, end=True)  # "end the run" ticked
        ended = await self.deliver("interactive", payload, user)
        return Told(pressed.lines + ended.lines)

    async def close(self) -> None:
        try:
            await self.hub.close()
            await self.frontend.stop()
        finally:
            await self.double.stop()


# ---- Discord: discord.py logged in to the Discord double -------------------------------------------------------
class _Watched:
    """The bridge's listeners, counted: each interaction's fresh() verdicts and each handler that finished
    (by interaction or message id). discord.py runs them in tasks nobody can await from outside."""

    def __init__(self, actions: Any) -> None:
        self.verdicts: defaultdict[int, list[bool]] = defaultdict(list)
        self.finished: Counter[int] = Counter()
        self.changed = asyncio.Event()
        fresh = actions.fresh

        def counted(interaction: discord.Interaction[Any]) -> bool:
            ok = bool(fresh(interaction))
            self.verdicts[interaction.id].append(ok)
            self.changed.set()
            return ok

        actions.fresh = counted
        for name in ("on_button", "on_words_form", "on_stop_form", "on_message"):
            setattr(actions, name, self._finishing(getattr(actions, name)))

    def _finishing(self, handler: Callable[..., Any]) -> Callable[..., Any]:
        async def run(first: Any, *args: Any) -> None:
            try:
                await handler(first, *args)
            finally:
                self.finished[int(first.id)] += 1
                self.changed.set()
        return run

    def handled(self, iid: int, nth: int) -> bool:
        """The `nth` delivery of interaction `iid` is handled: declined as a replay, or its handler returned."""
        seen = self.verdicts.get(iid, [])
        if len(seen) < nth:
            return False
        return not seen[nth - 1] or self.finished[iid] >= sum(seen[:nth])


class DiscordDriver:
    """The real DiscordFrontend (discord.py) logged in to the Discord double; Ana and Bea in its guild.
    Runs start in the double's #general; each opens its thread there."""

    platform = "discord"

    def __init__(self, double: DiscordDouble, bridge: DiscordFrontend, hub: Hub, people: list[Person]) -> None:
        self.double, self.bridge, self._hub = double, bridge, hub
        self.persons = {str(p.id): p for p in people}
        self.people: Sequence[str] = [str(p.id) for p in people]
        self.channel = f"discord:{double.channel_id}"
        self.watched = _Watched(bridge.client.actions)
        self._cards: dict[tuple[ThreadRef, str], int] = {}
        self._deliveries: dict[str, tuple[Ix, int]] = {}  # delivery name -> (the interaction, deliveries so far)

    @classmethod
    async def open(cls, kit: QuestionRuns, root: Path) -> DiscordDriver:
        double = await DiscordDouble(heartbeat_ms=1000).start()
        people = [double.person("Ana"), double.person("Bea")]
        bridge = DiscordFrontend(settings(double))
        bridge.surface.limits = FAST_LIMITS
        hub = door_hub(bridge.surface, root, kit)
        bridge.attach(hub)
        driver = cls(double, bridge, hub, people)
        await bridge.start()
        return driver

    @property
    def hub(self) -> Hub:
        return self._hub

    def _dms(self, user: str) -> list[str]:
        d = self.double
        dms = {cid for cid, c in d.channels.items() if c["type"] == 1 and c["recipients"][0]["id"] == user}
        return [DiscordDouble.text(m) for m in d.messages.values() if int(m["channel_id"]) in dms]

    async def _answered(self, ix: Ix, nth: int = 1) -> None:
        """Wait until the bridge has handled this delivery of `ix`, or Discord's deadline for a first answer
        passed without one (nobody took it)."""
        w = self.watched
        try:
            await until(w.changed, lambda: w.handled(ix.id, nth), DEADLINE_S + 0.5)
        except TimeoutError:
            if ix.acked or w.verdicts.get(ix.id):
                await within(w.changed, lambda: w.handled(ix.id, nth), f"the bridge handling interaction {ix.id}")

    def _told(self, ix: Ix, before: int, modal: bool = False) -> Told:
        lines = ix.texts()[before:]
        if not ix.acked and not lines:
            lines = [INTERACTION_FAILED]  # nobody answered it: Discord says so to the person
        form = OpenForm(str(ix.modal.get("title", "")), ix) if modal and ix.modal is not None else None
        return Told(tuple(lines), form)

    async def start(self, task: str, user: str) -> Started:
        d = self.double
        before = {m["id"] for m in d.bot_messages(d.channel_id)}
        ix = await d.slash(self.persons[user], "run", task=task)
        # Done when the "thinking…" placeholder has been replaced by the answer.
        await shows(d.until(lambda _: ix.original is not None and not int(ix.original.get("flags") or 0) & 128,
                            WAIT_S), "the answer to /flower run")
        starter = next((m for m in d.bot_messages(d.channel_id) if m["id"] not in before and "thread" in m), None)
        thread = ThreadRef(self.platform, str(d.channel_id), str(starter["id"])) if starter is not None else None
        return Started(thread, Told(tuple(ix.texts())))

    def _find(self, thread: ThreadRef, key: str, settled: bool) -> Shown | None:
        d = self.double
        mid = self._cards.get((thread, key))
        if mid is None:
            mid = next((int(m["id"]) for m in d.bot_messages(int(thread.thread))
                        if any(card_key(c) == key for c in d.custom_ids(m))), None)
            if mid is None:
                return None
            self._cards[(thread, key)] = mid
        msg = d.messages.get(mid)
        if msg is None or bool(msg["components"]) == settled:
            return None
        buttons = tuple((b.get("label", ""), b.get("custom_id", "")) for row in msg["components"]
                        for b in row.get("components", []))
        return Shown(DiscordDouble.text(msg), buttons, copy.deepcopy(msg))

    async def card(self, thread: ThreadRef, key: str, *, settled: bool = False) -> Shown:
        return await shows(self.double.until(lambda d: self._find(thread, key, settled), WAIT_S),
                           f"card {key} {'settled' if settled else 'open'} in {thread}")

    async def _click(self, msg: dict[str, Any], custom_id: str, user: str) -> tuple[Ix, Told]:
        """`user` presses the button `custom_id` on `msg` as their screen shows it."""
        ix = await self.double.click(self.persons[user], int(msg["id"]), custom_id=custom_id, seen=msg)
        await self._answered(ix)
        return ix, self._told(ix, 0, modal=True)

    async def press(self, shown: Shown, index: int, user: str, *, delivery: str | None = None) -> Told:
        if delivery is not None and delivery in self._deliveries:  # the same INTERACTION_CREATE once more
            ix, n = self._deliveries[delivery]
            self._deliveries[delivery] = (ix, n + 1)
            before = len(ix.texts())
            await self.double.redeliver(ix)
            await self._answered(ix, n + 1)
            return self._told(ix, before)
        msg = shown.handle
        assert isinstance(msg, dict)
        ix, told = await self._click(msg, shown.buttons[index][1], user)
        if delivery is not None:
            self._deliveries[delivery] = (ix, 1)
        return told

    async def press_id(self, thread: ThreadRef, action_id: str, user: str) -> Told:
        old = copy.deepcopy(self.double.messages[int(thread.thread)])  # a message of the bot's showing that button
        old["components"] = [{"type": 1, "components": [{"type": 2, "style": 2, "label": "Approve",
                                                         "custom_id": action_id}]}]
        return (await self._click(old, action_id, user))[1]

    async def submit_form(self, form: OpenForm, text: str, user: str) -> Told:
        opened = form.handle
        assert isinstance(opened, Ix)
        ix = await self.double.submit(self.persons[user], opened, {"Your answer": text})
        await self._answered(ix)
        return self._told(ix, 0)

    async def say(self, thread: ThreadRef, text: str, user: str) -> Told:
        before = len(self._dms(user))
        mid = await self.double.say(self.persons[user], int(thread.thread), text)
        w = self.watched
        await within(w.changed, lambda: w.finished[mid] >= 1, f"the bridge handling message {mid}")
        return Told(tuple(self._dms(user)[before:]))

    async def stop(self, thread: ThreadRef, user: str) -> Told:
        def stop_button(d: DiscordDouble) -> str | None:  # the starter message is the status card
            return next((c for c in d.custom_ids(d.messages[int(thread.thread)]) if verb_of(c) == "stop"), None)
        stop: str = await shows(self.double.until(stop_button, WAIT_S), "a Stop button on the status card")
        _, pressed = await self._click(copy.deepcopy(self.double.messages[int(thread.thread)]), stop, user)
        if pressed.form is None:
            return pressed
        opened = pressed.form.handle
        assert isinstance(opened, Ix)
        ix = await self.double.submit(self.persons[user], opened, {"End the run for good": True})
        await self._answered(ix)
        return Told(pressed.lines + self._told(ix, 0).lines)

    async def close(self) -> None:
        try:
            await self.hub.close()
            await self.bridge.stop()
        finally:
            await self.double.stop()


# ---- the web page's HTTP API -----------------------------------------------------------------------------
def page_shows(data: dict[str, Any]) -> list[str]:
    """What the page's `said()` toasts for an answer of the API (a form to open shows no toast)."""
    if data.get("needs_input"):
        return []
    if data.get("ok") or data.get("duplicate"):
        return [str(data.get("message") or "")]
    return [str(data.get("error") or data.get("message") or "")]


class WebDriver:
    """One person uses the page (the API's WEB_USER); the page watches the threads of the runs it started."""

    platform = "web"
    channel = "web:page"
    people: Sequence[str] = ("web",)

    def __init__(self, front: WebFrontend, hub: Hub, session: aiohttp.ClientSession) -> None:
        self.front, self._hub, self.session = front, hub, session
        self.changed = asyncio.Event()
        front.surface.listeners.append(lambda thread, body: self.changed.set())
        self.page = front.surface.watch()  # the open page: it gets the notices of the threads it shows

    @classmethod
    async def open(cls, kit: QuestionRuns, root: Path) -> WebDriver:
        front = WebFrontend(port=0, say=lambda s: None)
        hub = door_hub({"web": front.surface}, root, kit)
        front.attach(hub)
        await front.start()
        return cls(front, hub, aiohttp.ClientSession(base_url=front.url))

    @property
    def hub(self) -> Hub:
        return self._hub

    async def post(self, path: str, body: dict[str, Any]) -> Told:
        notices = len(self.page.notices)
        async with self.session.post(path, json=body) as resp:
            data: dict[str, Any] = await resp.json()
        lines = page_shows(data)
        lines += [n["text"] for n in self.page.notices[notices:] if n["text"] not in lines]
        form = OpenForm(str(data["needs_input"]), body["action_id"]) if data.get("needs_input") else None
        return Told(tuple(lines), form)

    async def start(self, task: str, user: str) -> Started:
        notices = len(self.page.notices)
        async with self.session.post("/api/runs", json={"task": task}) as resp:
            data: dict[str, Any] = await resp.json()
        if not data.get("ok"):  # the page shows the error under the form
            return Started(None, Told((str(data.get("error", "")), *(n["text"] for n in self.page.notices[notices:]))))
        thread = ThreadRef.parse(str(data["thread"]))
        self.page.threads.add(str(thread))  # the page selects the new run
        await within(self.changed, lambda: self.front.surface.changes(thread), f"the first message in {thread}")
        return Started(thread, Told())

    def _find(self, thread: ThreadRef, key: str, settled: bool) -> Shown | None:
        for row in self.front.surface.changes(thread):
            if row["kind"] == "ask" and row["key"].split("-", 1)[-1] == key and bool(row["buttons"]) != settled:
                return Shown("\n".join([row["title"], row["text"]]),
                             tuple((b["label"], b["action_id"]) for b in row["buttons"]), row["id"])
        return None

    async def card(self, thread: ThreadRef, key: str, *, settled: bool = False) -> Shown:
        shown: Shown = await within(self.changed, lambda: self._find(thread, key, settled),
                                    f"card {key} {'settled' if settled else 'open'} in {thread}")
        return shown

    async def press(self, shown: Shown, index: int, user: str, *, delivery: str | None = None) -> Told:
        return await self.post("/api/action", {"action_id": shown.buttons[index][1],
                                               "delivery_id": delivery or uuid.uuid4().hex})

    async def press_id(self, thread: ThreadRef, action_id: str, user: str) -> Told:
        return await self.post("/api/action", {"action_id": action_id, "delivery_id": uuid.uuid4().hex})

    async def submit_form(self, form: OpenForm, text: str, user: str) -> Told:
        return await self.post("/api/action", {"action_id": str(form.handle), "text": text,
                                               "delivery_id": uuid.uuid4().hex})

    def _run(self, thread: ThreadRef) -> str:
        run_id = self.hub.query.run_in(thread)
        if run_id is None:
            raise AssertionError(f"the page shows no run in {thread}")
        return run_id

    async def say(self, thread: ThreadRef, text: str, user: str) -> Told:
        return await self.post(f"/api/runs/{self._run(thread)}/say", {"text": text})

    async def stop(self, thread: ThreadRef, user: str) -> Told:
        return await self.post(f"/api/runs/{self._run(thread)}/end", {})  # Stop… → "End the run"

    async def close(self) -> None:
        self.front.surface.unwatch(self.page)
        try:
            await self.session.close()
            await self.hub.close()
        finally:
            await self.front.stop()
