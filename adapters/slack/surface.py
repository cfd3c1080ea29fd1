"""SlackSurface: the hub's neutral messages in a Slack channel thread.

Threads: a run's ThreadRef is ("slack", channel id, thread ts). A run started in a channel has its
status card as the thread's root message: the context posts that root first (`post_root`), records it
as the thread's "status" message, then starts the run in the thread it opened; from then on the
outbox edits the root in place and posts everything else as replies. A run started inside an
existing thread posts its status card as a reply like the rest.

Receipts for inbox mail that name the person's own message (`origin`) become reactions on it:
📨 queued (`incoming_envelope`), then 📬 delivered (`mailbox_with_mail`); the message id returned
is synthetic ("react:<origin ts>"). Without an origin, or if the message is gone, the receipt is a
small line in the thread instead.

Two clients: message posts and edits go through the outbox, which paces them per channel and retries
TransientSurfaceError honouring Retry-After, so their client has no retry handlers of its own (a
429 must reach the outbox, which then holds back the whole channel, not one call). Ephemeral notices
go straight from the hub, so they use the app's client, whose slack-sdk handlers retry 429s.

Status-card edits are the one exception to "the outbox sends it": `update` of a status card returns
at once and hands the card to a Coalescer (adapters/slack/coalesce.py), which sends the latest
version once it has held for `status_window_s` (at once for a run's end), and nothing when Slack
already shows it. A quickly answered question flips the card running → waiting → running: that costs
no edit. The coalescer retries a 429 or an outage itself (Retry-After honoured, up to
`status_give_up_s`); an edit Slack refuses for good is logged and the next change tries again.
A 429 on posts or edits in a channel holds back that method's later calls there on both paths.
`close()` sends what still waits, within its deadline.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.platform import (
    SLACK,
    LiveText,
    OutMessage,
    PermanentSurfaceError,
    PlatformLimits,
    PlatformSurface,
    ThreadRef,
    TransientSurfaceError,
)
from adapters.slack.coalesce import Coalescer
from adapters.slack.errors import is_code, slack_call
from adapters.slack.files import FILE_ID, post_file
from adapters.slack.render import render
from adapters.slack.sessions import AgentSessions, state_of
from adapters.slack.streams import SlackStreams
from adapters.slack.text import mrkdwn_escape
from adapters.view.status import FINAL_STATES

__all__ = ["REACTIONS", "SlackSurface"]

log = logging.getLogger(__name__)

REACTIONS = {"queued": "incoming_envelope", "delivered": "mailbox_with_mail"}
_REACT = "react:"
_RECENT_S = 10.0  # how long a notice counts as "just told" (see told_recently)
STATUS_WINDOW_S = 1.0  # status-card edits following each other within this are sent as one


def receipt_state(msg: OutMessage) -> str:
    return msg.state or "queued"


class SlackSurface(PlatformSurface):
    name = "slack"
    place = "Slack"  # how cards of a run shown in several places name this one ("answered by … on Slack")

    def __init__(self, client: AsyncWebClient, *, notify_client: AsyncWebClient | None = None,
                 sessions: AgentSessions | None = None, limits: PlatformLimits = SLACK,
                 footer: Callable[[ThreadRef], str] | None = None, status_window_s: float = STATUS_WINDOW_S,
                 status_give_up_s: float = 60.0) -> None:
        self.client = client
        self.notify_client = notify_client or client
        self.sessions = sessions
        self.limits = limits
        self.footer = footer  # the status card's "started by" line
        self.calls: dict[str, int] = {}
        self._provisional: set[ThreadRef] = set()  # threads whose root exists only while a start is decided
        self._told: dict[tuple[str, str], float] = {}
        self.status_give_up_s = status_give_up_s
        # (method, channel) -> (Slack said wait until, monotonic; whether the coalescer's call was told)
        self._held: dict[tuple[str, str], tuple[float, bool]] = {}
        self.status_edits: Coalescer[tuple[ThreadRef, str], OutMessage] = Coalescer(
            self._send_status, window_s=status_window_s, name="slack status card")
        self.streams = SlackStreams(client, lambda method, call: self._call(method, call, held=""))

    # ---- the Surface contract (all of it: place and direct too) --------------------------------
    async def post(self, thread: ThreadRef, msg: OutMessage) -> str:
        if msg.kind == "receipt" and msg.origin:
            return await self._react(thread, msg)
        if msg.attachment is not None and (uploaded := await post_file(self._call, self.client, thread, msg)):
            return uploaded  # a file the agent shared (files.py); else its text below names it
        blocks, text = render(msg, footer=self._footer(thread, msg))
        resp = await self._call("chat.postMessage", self.client.chat_postMessage(
            channel=thread.channel, thread_ts=thread.thread or None, blocks=blocks, text=text,
            unfurl_links=False, unfurl_media=False), held=thread.channel)
        ts = str(resp.get("ts") or "")
        if not ts:
            raise PermanentSurfaceError("slack chat.postMessage: no ts in the answer")
        if msg.kind == "status":
            self.status_edits.mark_shown((thread, ts), msg)
        self._saw(thread, msg)
        return ts

    async def update(self, thread: ThreadRef, message_id: str, msg: OutMessage) -> None:
        if message_id.startswith(FILE_ID):
            return  # an uploaded file is never edited
        if message_id.startswith(_REACT):
            await self._swap_reaction(thread, message_id.removeprefix(_REACT), msg)
            return
        if msg.kind == "status":
            self.status_edits.put((thread, message_id), msg, now=state_of(msg) in FINAL_STATES)
            self._saw(thread, msg)
            return
        await self._edit(thread, message_id, msg)

    async def _edit(self, thread: ThreadRef, message_id: str, msg: OutMessage) -> None:
        blocks, text = render(msg, footer=self._footer(thread, msg))
        await self._call("chat.update", self.client.chat_update(channel=thread.channel, ts=message_id, blocks=blocks,
                                                                text=text), held=thread.channel)
        self._saw(thread, msg)

    async def stream(self, thread: ThreadRef, message_id: str | None, live: LiveText) -> str:
        """The agent's words as they are written: chat.startStream / appendStream / stopStream (streams.py)."""
        return await self.streams.stream(thread, message_id, live)

    async def close(self, timeout: float = 5.0) -> None:
        """Send the status-card edits still waiting (bounded by `timeout`)."""
        await self.status_edits.close(timeout)

    async def notify(self, thread: ThreadRef, user: str, text: str) -> None:
        thread_ts = thread.thread if thread.thread and thread not in self._provisional else None
        self._forget_told()
        self._told[(user, text)] = time.monotonic()
        await self._call("chat.postEphemeral", self.notify_client.chat_postEphemeral(
            channel=thread.channel, user=user, text=mrkdwn_escape(text), thread_ts=thread_ts))

    async def direct(self, user: str) -> ThreadRef:
        """The user's direct message with the bot (the hub sends a run's owner a question that waited)."""
        resp = await self._call("conversations.open", self.notify_client.conversations_open(users=user))
        channel = resp.get("channel") or {}
        if not isinstance(channel, dict) or not channel.get("id"):
            raise PermanentSurfaceError("slack conversations.open: no channel id in the answer")
        return ThreadRef("slack", str(channel["id"]), "")

    # ---- what the context needs beside the protocol ------------------------------------------------
    async def post_root(self, channel: str, msg: OutMessage) -> str:
        """Post a message at the top of the channel (a run's status card); its ts opens the run's thread."""
        blocks, text = render(msg)
        resp = await self._call("chat.postMessage", self.notify_client.chat_postMessage(
            channel=channel, blocks=blocks, text=text, unfurl_links=False, unfurl_media=False))
        return str(resp["ts"])

    async def delete(self, channel: str, ts: str) -> None:
        await self._call("chat.delete", self.notify_client.chat_delete(channel=channel, ts=ts))

    def provisional(self, thread: ThreadRef, on: bool) -> None:
        """While a start is decided, notices about it go to the channel, not into the root's thread."""
        (self._provisional.add if on else self._provisional.discard)(thread)

    def told_recently(self, user: str, text: str) -> bool:
        """Whether exactly this notice went to this user a moment ago (the hub refuses and notifies
        itself; the context then does not say it twice)."""
        self._forget_told()
        return (user, text) in self._told

    def _forget_told(self) -> None:
        now = time.monotonic()
        for key in [k for k, at in self._told.items() if now - at > _RECENT_S]:
            del self._told[key]

    # ---- internals ----------------------------------------------------------------------------------
    async def _call(self, method: str, call: Any, *, held: str = "", coalesced: bool = False) -> Any:
        """One Web API call. With `held` (a channel), a 429 on this method there holds back its later calls
        in that channel for Retry-After on both paths: the coalescer waits any hold out; an outbox call
        meeting a hold the coalescer's own 429 set gets it as a TransientSurfaceError (the outbox then holds
        the channel as for a 429 of its own). The outbox's 429s it already honours itself."""
        key = (method, held)
        until, by_coalescer = self._held.get(key, (0.0, False))
        wait = until - time.monotonic()
        if held and wait > 0 and (coalesced or by_coalescer):
            if not coalesced:
                call.close()  # never started: close it so it is not reported as never awaited
                raise TransientSurfaceError(f"slack {method}: rate limited in {held}", retry_after=wait)
            try:
                await asyncio.sleep(wait)
            except BaseException:
                call.close()
                raise
        self.calls[method] = self.calls.get(method, 0) + 1
        try:
            return await slack_call(method, call)
        except TransientSurfaceError as exc:
            if held and exc.retry_after:
                now = time.monotonic()
                for old in [k for k, (end, _by) in self._held.items() if end <= now]:
                    del self._held[old]
                self._held[key] = (now + exc.retry_after, coalesced)
            raise

    async def _send_status(self, key: tuple[ThreadRef, str], msg: OutMessage) -> bool:
        """The coalescer's send: one status-card edit, retried while Slack is busy or away (bounded)."""
        thread, ts = key
        deadline = time.monotonic() + self.status_give_up_s
        attempt = 0
        while True:
            try:
                blocks, text = render(msg, footer=self._footer(thread, msg))
                await self._call("chat.update", self.client.chat_update(channel=thread.channel, ts=ts, blocks=blocks,
                                                                        text=text),
                                 held=thread.channel, coalesced=True)
                return True
            except TransientSurfaceError as exc:
                delay = exc.retry_after if exc.retry_after is not None else min(30.0, 2.0 ** attempt)
                attempt += 1
                if time.monotonic() + delay > deadline:
                    log.warning("status card %s in %s not edited: Slack stayed busy (%s)", ts, thread, exc)
                    return False
                await asyncio.sleep(delay)
            except PermanentSurfaceError as exc:
                log.warning("status card %s in %s not edited (%s); the next change tries again", ts, thread, exc)
                return False

    def _footer(self, thread: ThreadRef, msg: OutMessage) -> str:
        if msg.kind != "status" or self.footer is None:
            return ""
        try:
            return self.footer(thread)
        except Exception as exc:  # a lookup must not keep the card from going out
            log.warning("status footer for %s: %r", thread, exc)
            return ""

    def _saw(self, thread: ThreadRef, msg: OutMessage) -> None:
        if msg.kind == "status" and self.sessions is not None:
            self.sessions.saw_status(thread, msg)

    async def _react(self, thread: ThreadRef, msg: OutMessage) -> str:
        try:
            await self._add_reaction(thread.channel, msg.origin, REACTIONS[receipt_state(msg)])
        except PermanentSurfaceError as exc:
            if not is_code(exc, "message_not_found", "no_item_specified", "bad_timestamp"):
                raise
            log.info("receipt for a message that is gone (%s): posting it as a thread line", exc)
            return await self.post(thread, _as_line(msg))
        if receipt_state(msg) == "delivered":
            await self._remove_reaction(thread.channel, msg.origin, REACTIONS["queued"])
        return _REACT + msg.origin

    async def _swap_reaction(self, thread: ThreadRef, origin: str, msg: OutMessage) -> None:
        state = receipt_state(msg)
        await self._add_reaction(thread.channel, origin, REACTIONS[state])
        if state == "delivered":
            await self._remove_reaction(thread.channel, origin, REACTIONS["queued"])

    async def _add_reaction(self, channel: str, ts: str, name: str) -> None:
        try:
            await self._call("reactions.add", self.client.reactions_add(channel=channel, timestamp=ts, name=name))
        except PermanentSurfaceError as exc:
            if not is_code(exc, "already_reacted"):
                raise

    async def _remove_reaction(self, channel: str, ts: str, name: str) -> None:
        try:
            await self._call("reactions.remove", self.client.reactions_remove(channel=channel, timestamp=ts,
                                                                              name=name))
        except PermanentSurfaceError as exc:
            if not is_code(exc, "no_reaction", "message_not_found"):
                raise


def _as_line(msg: OutMessage) -> OutMessage:
    return replace(msg, origin="")
