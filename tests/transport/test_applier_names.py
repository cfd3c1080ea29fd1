"""The applier tells the question channel who settled a question, so a hand-over note can name them."""

from __future__ import annotations

import asyncio

from adapters.transport.applier import Applier
from adapters.transport.intents import Intent, Op
from flower_core import Event
from flower_core.human import HumanChannel


async def _oracle(_: str) -> str:
    return ""


async def test_an_applied_answer_names_who_gave_it_to_the_channel() -> None:
    channel = HumanChannel(timeout_s=30)
    events: list[Event] = []
    applier = Applier("r1", channel=channel, runtime=None, log_=None, ask_oracle=_oracle, cancel=lambda _: True,
                      emit=events.append)
    assert await applier.replay() is False  # nothing left by an earlier holder
    asking = asyncio.create_task(channel.ask("Which  colour?", ["red", "blue"]))
    while not channel.pending():
        await asyncio.sleep(0)
    reply = await applier.apply(Intent(Op.ANSWER, "blue", ask="q1", question="Which colour?", user="U1",
                                       by="Ana on Slack"))
    assert reply.ok and (await asking).answer == "blue"
    assert channel.answered_by == {"which colour?": "Ana on Slack"}
    unnamed = await applier.apply(Intent(Op.ANSWER, "red", ask="q9", question="Another?", user="U2"))
    assert not unnamed.ok and channel.answered_by == {"which colour?": "Ana on Slack"}  # refused: nobody named
