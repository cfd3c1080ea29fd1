"""The agent's words streamed into a Slack thread: chat.startStream → chat.appendStream → chat.stopStream.

One streamed message per live message (`LiveText`), through slack-sdk's helper (`client.chat_stream`, an
`AsyncChatStream` per message, its buffer one character so every call the outbox makes goes out: the
outbox already gathers the words and paces the calls). What Slack requires:

=========================  ===============================================================================
argument                   what we send
=========================  ===============================================================================
``thread_ts``              the run's thread (a streamed message always replies); a thread-less place refuses
``recipient_user_id``      the run's owner, when the owner is a Slack user and the channel is not a DM
``recipient_team_id``      the workspace's team (auth.test), with the user
``chunks``                 ``markdown_text`` chunks (the helper's), ≤ the outbox's text_max (3,000) a call;
                           a ``task_update`` for each task that changed since the last call (a tool call:
                           ``in_progress`` → ``complete`` / ``error`` with a short ``output``); a plan's
                           ``plan_update`` (its title) once
``task_display_mode``      ``plan`` for the agent's plan (its items shown together), else Slack's default
=========================  ===============================================================================

A stream Slack will not start (`REFUSED`: an older workspace, an app not set up for it, a DM-only method)
raises StreamRefused: the outbox falls back to ordinary messages for that thread. A message an earlier
process started can still be closed (`chat.stopStream` by its ts) but not grown.

When a call fails, the helper keeps the words it could not send in its buffer; the outbox then tries the
same words again, so only the part not already held is appended (`_Open.held`), and nothing is sent twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_sdk.models.messages.chunk import Chunk, PlanUpdateChunk, TaskUpdateChunk
from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from adapters.platform import LiveText, PermanentSurfaceError, StreamRefused, SurfaceError, Task, ThreadRef
from adapters.slack.errors import is_code

__all__ = ["REFUSED", "SlackStreams"]

# Slack's answers that mean "no streaming here", not "try again".
REFUSED = ("unknown_method", "method_not_supported_for_channel_type", "not_allowed_token_type",
           "feature_not_enabled", "missing_scope", "not_an_agent")


@dataclass
class _Open:
    stream: AsyncChatStream
    held: str = ""  # words the helper buffered when its call failed (it sends them with the next call)
    tasks: dict[str, Task] | None = None  # the tasks as Slack shows them (None: no call went through yet)


Call = Callable[[str, Awaitable[Any]], Awaitable[Any]]


class SlackStreams:
    """Streams of one Slack surface. `call` is the surface's Web API call (errors → SurfaceError)."""

    def __init__(self, client: AsyncWebClient, call: Call) -> None:
        self.client, self._call = client, call
        self.team_id = ""  # the workspace's team id, from auth.test (set by the front end once connected)
        self._open: dict[tuple[str, str], _Open] = {}  # (channel, key or ts) -> the helper of that message

    async def stream(self, thread: ThreadRef, message_id: str | None, live: LiveText) -> str:
        if not thread.thread:
            raise StreamRefused("slack: a streamed message must reply in a thread")
        slot = (thread.channel, message_id or f"new:{live.key}")
        got = self._open.get(slot)
        if got is None and message_id is not None:
            return await self._close_orphan(thread, message_id, live)
        if got is None:
            to = await self._recipient(thread, live.owner)
            mode = {"task_display_mode": "plan"} if live.plan else {}
            got = self._open[slot] = _Open(await self.client.chat_stream(
                channel=thread.channel, thread_ts=thread.thread, buffer_size=1, **to, **mode))
        words = _after(live.new, got.held)
        chunks = _changed(live, got.tasks)
        method = "chat.stopStream" if live.done else "chat.appendStream"
        try:
            if live.done:
                tail = f"{words}\n\n_{live.note}_" if live.note else words
                await self._call(method, got.stream.stop(markdown_text=tail or None, chunks=chunks or None))
            else:
                await self._call(method, got.stream.append(markdown_text=words or None, chunks=chunks))
        except SurfaceError as exc:
            if got.stream.ts is None and _refused(exc):
                self._open.pop(slot, None)
                raise StreamRefused(str(exc)) from exc
            got.held += words  # the helper holds them now: the retry must not add them again
            raise
        got.held, got.tasks = "", {t.id: t for t in live.tasks}
        ts = got.stream.ts
        if ts is None:
            raise PermanentSurfaceError("slack chat.startStream: no ts in the answer")
        del self._open[slot]
        if not live.done:
            self._open[(thread.channel, ts)] = got
        return ts

    async def _recipient(self, thread: ThreadRef, owner: str) -> dict[str, str]:
        if thread.channel.startswith("D"):  # a direct message: Slack knows whom it is for
            return {}
        platform, _, user = owner.partition(":")
        if platform != "slack" or not user:
            raise StreamRefused("slack: streaming into a channel needs the run's owner as a Slack user")
        if not self.team_id:  # once per process, unless the front end told us at connect
            self.team_id = str((await self._call("auth.test", self.client.auth_test())).get("team_id") or "")
        return {"recipient_user_id": user, "recipient_team_id": self.team_id}

    async def _close_orphan(self, thread: ThreadRef, ts: str, live: LiveText) -> str:
        """A message an earlier process was streaming: close it (its words so far stay), never grow it."""
        if not live.done:
            raise PermanentSurfaceError("slack: message_not_in_streaming_state (started by an earlier process)")
        tail = f"\n\n_{live.note}_" if live.note else ""
        await self._call("chat.stopStream", self.client.chat_stopStream(
            channel=thread.channel, ts=ts, markdown_text=tail or None))
        return ts


def _changed(live: LiveText, shown: dict[str, Task] | None) -> list[Chunk]:
    """A task_update for every task Slack does not show as it is now; a plan's title with its first call."""
    chunks: list[Chunk] = [PlanUpdateChunk(title=live.title or "Plan")] if live.plan and shown is None else []
    for t in live.tasks:
        if (shown or {}).get(t.id) != t:
            chunks.append(TaskUpdateChunk(id=t.id, title=t.title, status=t.status, output=t.output or None))
    return chunks


def _after(new: str, held: str) -> str:
    """What of `new` the helper does not hold yet."""
    return new[len(held):] if held and new.startswith(held) else new


def _refused(exc: SurfaceError) -> bool:
    return isinstance(exc, PermanentSurfaceError) and is_code(exc, *REFUSED)
