"""The campaign's table (issue 18's rows first), and what the suite asserts of it."""

from __future__ import annotations

import signal
from dataclasses import dataclass

from tests.support.campaign.killer import KillStats
from tests.support.campaign.ledger import Ledger
from tests.support.campaign.seqwatch import SeqStats
from tests.support.campaign.tally import Figures


@dataclass
class Report:
    figures: Figures
    kills: KillStats
    seq: SeqStats
    ledger: Ledger
    seed: int
    wall_s: float
    ready_s: list[float]
    term_hung: int
    term_left: int
    bot_status: dict[str, int]  # what the bot's own API said at the end: shown, never counted
    log_errors: int = 0  # ERROR lines and tracebacks in the bot's log
    log_tail: str = ""

    def problems(self) -> list[str]:
        """The issue's "done" criteria that do not hold (empty: all hold)."""
        f, out = self.figures, []
        if f.lost:
            out.append(f"{f.lost} accepted input(s) never reached the model")
        if f.duplicated:
            out.append(f"{f.duplicated} accepted input(s) reached the model more than once")
        if f.stuck:
            out.append(f"{len(f.stuck)} run(s) left stuck: {', '.join(f.stuck[:10])}")
        i = f.of("interrupt")
        if i.reached != i.accepted:
            out.append(f"{i.accepted - i.reached} accepted interrupt(s) did not reach the model exactly once")
        if self.seq.violations:
            out.append(f"{self.seq.violations} event seq violation(s) over the WebSocket")
        return out

    def table(self) -> str:
        f, k = self.figures, self.kills
        a, m, i = f.of("answer"), f.of("mail"), f.of("interrupt")
        moments = ", ".join(f"{name} {n}" for name, n in sorted(k.done.items()))
        missed = ", ".join(f"{name} {n}" for name, n in sorted(k.missed.items())) or "none"
        ready = sorted(self.ready_s)
        rows = [
            ("answers the API accepted", a.accepted),
            ("reached the model exactly once", a.reached),
            ("**lost** (accepted, never reached the model)", a.lost),
            ("duplicated", a.duplicated),
            ("mail accepted / reached / lost / duplicated", f"{m.accepted} / {m.reached} / {m.lost} / {m.duplicated}"),
            ("mail accepted after the model's last inbox read (late, not counted)", m.late),
            ("runs started / finished / **left stuck**", f"{f.runs_started} / {f.runs_finished} / {len(f.stuck)}"),
            ("interrupts accepted / **reached the model**", f"{i.accepted} / {i.reached}"
             + (f" (duplicated {i.duplicated})" if i.duplicated else "")),
            (f"event `seq` violations over {self.seq.reconnects} WebSocket reconnects", self.seq.violations),
            ("runs whose conversation spans several sessions (counted across them)", len(f.multi_session)),
            ("kills: SIGKILL / SIGTERM", f"{k.by_signal(signal.SIGKILL)} / {k.by_signal(signal.SIGTERM)}"),
            ("SIGTERM: not ended in time (then SIGKILL) / left processes behind",
             f"{self.term_hung} / {self.term_left}"),
            ("kill moments", moments),
            ("moments that did not come in time (killed anyway)", missed),
            ("inputs refused by the API (not counted)", _counter(self.ledger.refused)),
            ("inputs sent while the bot was down or cut off by a kill: no answer (not counted)",
             _counter(self.ledger.unanswered)),
            ("refused or unanswered inputs that reached the model anyway", f.unaccepted_reached),
            ("the bot's own statuses at the end (shown, not counted)", _counter(self.bot_status)),
            ("ERROR lines and tracebacks in the bot's log", self.log_errors),
            ("restart to API answering: median / max", f"{ready[len(ready) // 2]:.1f} s / {ready[-1]:.1f} s"
             if ready else "-"),
            ("model requests of campaign runs; wall time", f"{f.requests}; {self.wall_s:.0f} s"),
        ]
        lines = [f"restart campaign, seed {self.seed}", "", "| | |", "|---|---|"]
        lines += [f"| {name} | {value} |" for name, value in rows]
        for label, count in (("lost", a.lost_tokens + m.lost_tokens + i.lost_tokens),
                             ("duplicated", a.duplicated_tokens + m.duplicated_tokens + i.duplicated_tokens)):
            if count:
                lines.append(f"{label} (run:token): {', '.join(count[:12])}{' …' if len(count) > 12 else ''}")
        return "\n".join(lines)


def _counter(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "none"
