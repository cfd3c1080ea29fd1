"""A channel's routines as Slack shows them: one section and one row of buttons each (the codec's rt* verbs).

    ⏰ *Daily* `rt1a2b` — every weekday at 9:00 — next Mon 09:00 · last run `r…` (started)
    triage the new issues (by Ana)                                [Pause] [Run now] [Delete]

`/flower routines` answers with it, and a routine button's click replaces the list it was pressed on with a
fresh one (interactive.py), so Pause turns into Resume where it was pressed.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import ActionsBlock, ButtonElement, SectionBlock

from adapters.hub import RoutineInfo
from adapters.ids import encode
from adapters.slack.context import PLATFORM, SlackContext
from adapters.slack.text import mrkdwn_escape, plain
from adapters.view import fmt as _fmt

__all__ = ["routines_list"]

ROUTINES_SHOWN = 20  # two blocks each, under Slack's 50


def routines_list(ctx: SlackContext, channel: str) -> tuple[str, list[Any]]:
    """This channel's routines, one section each with its buttons (ids: the codec's rt* verbs)."""
    found = ctx.hub.query.routines(platform=PLATFORM, channel=channel)
    if not found:
        text = ("No routines in this channel. `/flower every weekday at 9:00 <task>` makes one "
                "(`/flower help` shows the schedules).")
        return text, [SectionBlock(text=mrkdwn_escape(text))]
    blocks: list[Any] = []
    for info in found[:ROUTINES_SHOWN]:
        r = info.routine
        blocks.append(SectionBlock(text=routine_line(ctx, info)))
        toggle = ButtonElement(text=plain("Resume" if r.paused else "Pause", 75),
                               action_id=encode("rtr" if r.paused else "rtp", r.routine_id))
        blocks.append(ActionsBlock(elements=[
            toggle, ButtonElement(text=plain("Run now", 75), action_id=encode("rtn", r.routine_id), style="primary"),
            ButtonElement(text=plain("Delete", 75), action_id=encode("rtd", r.routine_id), style="danger")]))
    more = len(found) - ROUTINES_SHOWN
    text = f"{len(found)} routine(s) in this channel" + (f" ({more} more not shown)" if more > 0 else "")
    return text, blocks


def routine_line(ctx: SlackContext, info: RoutineInfo) -> str:
    r = info.routine
    said = mrkdwn_escape(info.said)
    return (f"⏰ *{mrkdwn_escape(r.name)}* `{r.routine_id}` — {said} — {info.state}{info.last_run}\n"
            f"{mrkdwn_escape(_fmt.one_line(r.task, 200))} (by {mrkdwn_escape(ctx.hub.query.display(r.owner))})")
