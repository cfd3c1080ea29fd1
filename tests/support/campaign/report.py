"""The campaign's table (issue 18's rows first), what the suite asserts of it, and what explains each input that
did not reach exactly one model turn as its input (issue 32)."""

from __future__ import annotations

import signal
from collections import Counter
from dataclasses import dataclass

from tests.support.campaign.killer import KillStats
from tests.support.campaign.ledger import Ledger
from tests.support.campaign.seqwatch import SeqStats
from tests.support.campaign.tally import Figures
from tests.support.campaign.turns import shape

KIND_ORDER = ("answer", "decline", "mail", "interrupt", "approval")
EXPLAINED = 12  # inputs shown request by request (every shape is still counted and shown once)


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

    def turn_problems(self) -> list[str]:
        """Issue 32's criterion: every accepted input is one model turn's input (0 only in history, 0 twice)."""
        f, out = self.figures, []
        if f.only_in_history:
            out.append(f"{f.only_in_history} accepted input(s) only in history (never a model turn's input)")
        if f.twice:
            out.append(f"{f.twice} accepted input(s) twice (the input of two turns, or twice in history)")
        return out

    def table(self) -> str:
        f, k = self.figures, self.kills
        a, m, i = f.of("answer"), f.of("mail"), f.of("interrupt")
        moments = ", ".join(f"{name} {n}" for name, n in sorted(k.done.items()))
        missed = ", ".join(f"{name} {n}" for name, n in sorted(k.missed.items())) or "none"
        ready = sorted(self.ready_s)
        rows = [
            ("answers the API accepted", a.accepted),
            ("reached the model exactly once (once in the kept history)", a.reached),
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
        kinds = sorted(f.kinds, key=lambda k: KIND_ORDER.index(k) if k in KIND_ORDER else len(KIND_ORDER))
        rows[8:8] = [(f"{kind}s as a model turn's input: accepted / **once** / only in history / twice / lost"
                      + (" / late" if f.of(kind).late else ""), _as_input(f, kind)) for kind in kinds]
        lines = [f"restart campaign, seed {self.seed}", "", "| | |", "|---|---|"]
        lines += [f"| {name} | {value} |" for name, value in rows]
        for label, count in (("lost", a.lost_tokens + m.lost_tokens + i.lost_tokens),
                             ("duplicated", a.duplicated_tokens + m.duplicated_tokens + i.duplicated_tokens)):
            if count:
                lines.append(f"{label} (run:token): {', '.join(count[:12])}{' …' if len(count) > 12 else ''}")
        return "\n".join(lines)

    def not_once(self) -> list[tuple[str, str, str, str]]:
        """(class, kind, run id, token) of every accepted input that was not one turn's input, lost ones included."""
        f, out = self.figures, []
        for kind in sorted(f.kinds):
            c = f.kinds[kind]
            for label, tokens in (("twice", c.twice_tokens), ("lost", c.lost_tokens),
                                  ("only in history", c.history_tokens)):
                for entry in tokens:
                    run, token = entry.split(":", 1)
                    out.append((label, kind, run, token))
        order = ("twice", "lost", "only in history")
        return sorted(out, key=lambda row: order.index(row[0]))  # stable: kinds stay in order within a class

    def explanation(self, explained: int | None = EXPLAINED) -> str:
        """Each input that was not one turn's input: its shape; the shapes counted; then the requests around the
        first `explained` of them (None: all; twice and lost first), so a reader sees which turn had it and what came
        next."""
        f, rows = self.figures, self.not_once()
        explained = len(rows) if explained is None else explained
        if not rows:
            return "every accepted input was the input of exactly one model turn"
        lines, shapes = ["inputs that were not exactly one model turn's input:"], Counter[str]()
        for label, kind, run, token in rows:
            view = f.views.get(run)
            line = shape(view, token) if view is not None else "the run sent no request"
            shapes[f"{label}: {line}"] += 1
            lines.append(f"  {label:<15} {kind:<9} {run}:{token}  {line}")
        lines += ["", "shapes (how many inputs went each way):"]
        lines += [f"  {n:>3} × {key}" for key, n in shapes.most_common()]
        lines += ["", f"requests around the first {min(explained, len(rows))} (T = a turn, - = not a turn; "
                      "the reply served; the request's last messages):"]
        for label, kind, run, token in rows[:explained]:
            view = f.views.get(run)
            marks = [*self.kills.at, *((a.at, f"accepted: {a.kind} {a.token}") for a in self.ledger.accepted
                                       if a.token == token)]
            lines.append(f"  {label} {kind} {run}:{token}")
            lines += [f"    {x}" for x in (view.explain(token, marks) if view is not None else [])]
        return "\n".join(lines)


def _as_input(f: Figures, kind: str) -> str:
    c = f.of(kind)
    late = f" / {c.late}" if c.late else ""
    return f"{c.accepted} / {c.as_input} / {c.only_in_history} / {c.twice} / {c.lost}{late}"


def _counter(counts: dict[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in sorted(counts.items())) or "none"
