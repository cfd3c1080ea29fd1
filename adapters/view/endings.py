"""How each way a run can end looks: one table every renderer reads (through `OutMessage.tone`).

    ending         icon  summary title                  tone       Discord embed · web card · Slack header
    done           ✅    Finished                       success    green
    failed         ❌    Failed                         danger     red
    stopped        ⏹️    Stopped                        muted      grey
    out_of_budget  💰    Stopped at the cost cap        warning    orange
    died           💤    Stopped by a bot restart       muted      grey (it may be woken)
    ended          🏁    Ended                          info       blue (an ending a newer version wrote)

A run is out of budget when its cost cap stopped it (the budget's "stopped" event: nobody raised the cap,
or its owner chose Stop); the run side reports that as a failed step, the view knows better. Slack has
no colour in Block Kit: its summary gets a context line with a coloured mark and the ending's label
(`by_tone`), under the header that keeps the icon.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ENDINGS", "Ending", "by_tone", "ending_of"]


@dataclass(frozen=True)
class Ending:
    name: str
    icon: str
    title: str  # the summary card's title, after the icon
    tone: str  # an OutMessage tone (adapters/platform/messages.py TONES)
    label: str  # a few words naming the ending, for a line of text


ENDINGS: dict[str, Ending] = {e.name: e for e in (
    Ending("done", "✅", "Finished", "success", "finished"),
    Ending("failed", "❌", "Failed", "danger", "failed"),
    Ending("stopped", "⏹️", "Stopped", "muted", "stopped"),
    Ending("out_of_budget", "💰", "Stopped at the cost cap", "warning", "out of budget"),
    Ending("died", "💤", "Stopped by a bot restart", "muted", "stopped by a restart"),
    Ending("ended", "🏁", "Ended", "info", "ended"),
)}


def ending_of(state: str, *, out_of_budget: bool = False) -> Ending:
    """The ending of a run that ended in `state` (done / failed / stopped / died, or one this version does
    not know); `out_of_budget`: its cost cap stopped it."""
    if out_of_budget and state in ("failed", "stopped"):
        return ENDINGS["out_of_budget"]
    return ENDINGS.get(state, ENDINGS["ended"])


def by_tone(tone: str) -> Ending | None:
    """The ending a summary's tone stands for (the first with that tone: "muted" is "stopped")."""
    return next((e for e in ENDINGS.values() if e.tone == tone), None)
