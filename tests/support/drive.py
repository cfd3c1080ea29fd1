"""drive(hub): the hub's one door (`hub.submit`) with one method per intent, for tests and benchmarks.

    await drive(hub).start("build a CLI", thread, "alice")  ==  await hub.submit(Start("build a CLI"), "alice",
                                                                                 where=thread)

Platforms build intents themselves; tests that play a person read better with a verb per line.
"""

from __future__ import annotations

from collections.abc import Sequence

from adapters.hub import (
    Answer,
    Approve,
    Attach,
    Attached,
    Click,
    Continue,
    Decline,
    Follow,
    Hub,
    Incoming,
    IntentResult,
    Interrupt,
    Oracle,
    Resume,
    RunOptions,
    Said,
    Send,
    Start,
    Stop,
    Unfollow,
    Wake,
)
from adapters.platform import ThreadRef

__all__ = ["Driver", "drive"]


class Driver:
    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    async def start(self, task: str, thread: ThreadRef, user: str, *,
                    options: RunOptions | None = None) -> IntentResult:
        return await self.hub.submit(Start(task, options), user, where=thread)

    async def answer(self, run_id: str, card_id: str, text: str, user: str, *,
                     where: ThreadRef | None = None) -> IntentResult:
        return await self.hub.submit(Answer(run_id, card_id, text), user, where=where)

    async def decline(self, run_id: str, card_id: str, user: str, reason: str = "", *,
                      where: ThreadRef | None = None) -> IntentResult:
        return await self.hub.submit(Decline(run_id, card_id, reason), user, where=where)

    async def approve(self, run_id: str, card_id: str, decision: str, user: str, text: str = "", *,
                      where: ThreadRef | None = None) -> IntentResult:
        return await self.hub.submit(Approve(run_id, card_id, decision, text), user, where=where)

    async def send(self, run_id: str, text: str, user: str, *, origin: str = "",
                   where: ThreadRef | None = None) -> IntentResult:
        return await self.hub.submit(Send(run_id, text, origin), user, where=where)

    async def attach(self, run_id: str, files: Sequence[Incoming], text: str, user: str, *, origin: str = "",
                     where: ThreadRef | None = None) -> Attached:
        return await self.hub.submit(Attach(run_id, tuple(files), text, origin), user, where=where)

    async def interrupt(self, run_id: str, text: str, user: str) -> IntentResult:
        return await self.hub.submit(Interrupt(run_id, text), user)

    async def oracle(self, run_id: str, question: str, user: str) -> IntentResult:
        return await self.hub.submit(Oracle(run_id, question), user)

    async def stop(self, run_id: str, user: str) -> IntentResult:
        return await self.hub.submit(Stop(run_id), user)

    async def wake(self, run_id: str, user: str, remark: str = "") -> IntentResult:
        return await self.hub.submit(Wake(run_id, remark), user)

    async def continue_run(self, run_id: str, text: str, user: str, *,
                           where: ThreadRef | None = None) -> IntentResult:
        return await self.hub.submit(Continue(run_id, text), user, where=where)

    async def resume(self, run_id: str, thread: ThreadRef, user: str, text: str = "") -> IntentResult:
        return await self.hub.submit(Resume(run_id, text), user, where=thread)

    async def follow(self, run_id: str, thread: ThreadRef, user: str) -> IntentResult:
        return await self.hub.submit(Follow(run_id), user, where=thread)

    async def unfollow(self, thread: ThreadRef, user: str) -> IntentResult:
        return await self.hub.submit(Unfollow(), user, where=thread)

    async def said(self, thread: ThreadRef, user: str, text: str, *, origin: str = "",
                   reply_to: str = "") -> IntentResult | None:
        """None when the thread holds no run (the message was not for the hub)."""
        result = await self.hub.submit(Said(text, origin, reply_to), user, where=thread)
        return None if result.ignored else result

    async def handle_action(self, action_id: str, user: str, *, delivery_id: str | None = None,
                            text: str | None = None, where: ThreadRef | None = None) -> IntentResult:
        return await self.hub.submit(Click(action_id, text), user, delivery_id=delivery_id, where=where)


def drive(hub: Hub) -> Driver:
    return Driver(hub)
