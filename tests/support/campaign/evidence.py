"""Count a campaign again from its evidence.json (Settings(evidence=True), or `bench_restarts K --keep DIR`).

    python -m tests.support.campaign.evidence DIR/evidence.json

prints the tally's figures per kind and the explanation of every input that was not exactly one model
turn's input, without running anything: the count is pure, so a changed count can be checked on old runs.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flower_core.devmodel import RecordedRequest
from tests.support.campaign.killer import KillStats
from tests.support.campaign.ledger import Accepted, Ledger
from tests.support.campaign.report import Report
from tests.support.campaign.script import Script
from tests.support.campaign.seqwatch import SeqStats
from tests.support.campaign.tally import tally


@dataclass(frozen=True)
class Evidence:
    accepted: list[Accepted]
    not_accepted: list[Accepted]
    requests: list[RecordedRequest]
    kills: list[tuple[float, str]]


def load(path: Path) -> Evidence:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    requests = [RecordedRequest(path=r["path"], body=r["body"], turn=r["turn"], served=r["served"],
                                received_at=r["received_at"], reply_text=r.get("reply_text", ""),
                                reply_tool_ids=tuple(r.get("reply_tool_ids", ())))
                for r in data["requests"]]
    return Evidence([Accepted(**a) for a in data["accepted"]], [Accepted(**a) for a in data["not_accepted"]],
                    requests, [(float(at), str(what)) for at, what in data.get("kills", [])])


def report(evidence: Evidence, script: Script | None = None) -> Report:
    """A report of the count alone (kills, seq and the bot's own figures are not in the evidence)."""
    figures = tally(evidence.accepted, evidence.requests, script or Script.load(), evidence.not_accepted)
    ledger = Ledger(accepted=evidence.accepted, not_accepted=evidence.not_accepted)
    return Report(figures, KillStats(at=evidence.kills), SeqStats(), ledger, seed=-1, wall_s=0.0, ready_s=[],
                  term_hung=0, term_left=0, bot_status={})


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    rep = report(load(Path(args[0])))
    f = rep.figures
    for kind, c in sorted(f.kinds.items()):
        print(f"{kind}: accepted {c.accepted}, once {c.as_input}, only in history {c.only_in_history}, "
              f"twice {c.twice}, lost {c.lost}, late {c.late}")
    print(f"runs {f.runs_started}, finished {f.runs_finished}, stuck {len(f.stuck)}")
    print(rep.explanation(explained=None))


if __name__ == "__main__":
    main()
