"""The count: what the API accepted (the ledger) against what the model double received. Pure functions.

A run's requests are the ones whose first user message holds its task token. They are grouped by the
session id the CLI sends in `metadata.user_id`; a session's last request carries its whole
conversation. A session is left out when a later session's last request carries every tool call
its own did (it was resumed or forked into that one, history and all); the others are *kept*, and a
run with more than one kept session is said to span several sessions. Each accepted token is counted
in the user side of the kept sessions' last requests (user text and tool results, never what the
model said): once = reached, zero = lost, more = duplicated.

Issue 32 asks more: was the input a model turn's *input*? turns.py reads each run's requests for that
(the new input of the requests the conversation went on from): as input once, only in history, twice;
`KindCount.as_input` / `only_in_history` / `twice` hold it, the history count above stays as it was.

One allowance, for mail only: mail to a run that finished, accepted after the model's last inbox read
(no inbox turn was served to the run after the mail was accepted), is *late*: the scenario never
looked again, so it could not have arrived. It is shown on its own line, never among the reached;
mail to a run that never finished is lost, not late. Inputs the API refused or never answered are
not expected anywhere; those found anyway are counted apart (`unaccepted_reached`). A run is
*finished* when the double served it the model's last word; every other run the API accepted is
*stuck*, whatever the bot's own status says.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from flower_core.devmodel import RecordedRequest
from tests.support.campaign.ledger import Accepted
from tests.support.campaign.script import Script
from tests.support.campaign.turns import HISTORY, LOST, ONCE, TWICE, RunView, session_id, user_side

__all__ = ["Figures", "KindCount", "session_id", "tally", "user_side"]


@dataclass
class KindCount:
    accepted: int = 0
    reached: int = 0
    lost: int = 0
    duplicated: int = 0
    late: int = 0
    lost_tokens: list[str] = field(default_factory=list)
    duplicated_tokens: list[str] = field(default_factory=list)
    # As a model turn's input (turns.py): once / only in history / twice; lost is `lost` above.
    as_input: int = 0
    only_in_history: int = 0
    twice: int = 0
    history_tokens: list[str] = field(default_factory=list)
    twice_tokens: list[str] = field(default_factory=list)


@dataclass
class Figures:
    kinds: dict[str, KindCount]
    runs_started: int
    runs_finished: int
    stuck: list[str]
    multi_session: list[str]
    requests: int  # model requests of campaign runs
    unaccepted_reached: int = 0  # inputs the API refused (or never answered) that reached the model anyway
    views: dict[str, RunView] = field(default_factory=dict)  # run id -> its requests read, to explain a token

    def of(self, kind: str) -> KindCount:
        return self.kinds.get(kind, KindCount())

    @property
    def lost(self) -> int:
        return sum(k.lost for k in self.kinds.values())

    @property
    def duplicated(self) -> int:
        return sum(k.duplicated for k in self.kinds.values())

    @property
    def only_in_history(self) -> int:
        return sum(k.only_in_history for k in self.kinds.values())

    @property
    def twice(self) -> int:
        return sum(k.twice for k in self.kinds.values())


def tally(accepted: Iterable[Accepted], requests: Iterable[RecordedRequest], script: Script,
          not_accepted: Iterable[Accepted] = ()) -> Figures:
    entries = list(accepted)
    tasks = {a.run_id: a.token for a in entries if a.kind == "task"}
    by_run: dict[str, list[RecordedRequest]] = defaultdict(list)
    for rec in requests:
        if rec.path != "/v1/messages":
            continue
        text = rec.first_user_text
        run = next((r for r, token in tasks.items() if token in text), None)
        if run is not None:
            by_run[run].append(rec)
    views = {run: RunView.of(recs) for run, recs in by_run.items()}
    seen = {run: view.history for run, view in views.items()}
    inbox_times: dict[str, list[float]] = defaultdict(list)
    finished, multi = set(), []
    for run, recs in by_run.items():
        if len(views[run].kept) > 1:
            multi.append(run)
        inbox_times[run] = [r.received_at for r in recs if script.served_inbox(r.turn, r.served)]
        if any(script.is_end(r.turn, r.served) for r in recs):
            finished.add(run)
    kinds: dict[str, KindCount] = {}
    for a in entries:
        if a.kind == "task":
            continue
        count = kinds.setdefault(a.kind, KindCount())
        count.accepted += 1
        times = seen.get(a.run_id, "").count(a.token)
        if times == 1:
            count.reached += 1
        elif times > 1:
            count.duplicated += 1
            count.duplicated_tokens.append(f"{a.run_id}:{a.token}")
        elif a.kind == "mail" and a.run_id in finished and not any(t > a.at for t in inbox_times[a.run_id]):
            count.late += 1
        else:
            count.lost += 1
            count.lost_tokens.append(f"{a.run_id}:{a.token}")
        view = views.get(a.run_id)
        where = view.reach(a.token).kind if view is not None else LOST
        if where == ONCE:
            count.as_input += 1
        elif where == HISTORY:
            count.only_in_history += 1
            count.history_tokens.append(f"{a.run_id}:{a.token}")
        elif where == TWICE:
            count.twice += 1
            count.twice_tokens.append(f"{a.run_id}:{a.token}")
    unaccepted = sum(1 for a in not_accepted if a.kind != "task" and a.token in seen.get(a.run_id, ""))
    return Figures(kinds, len(tasks), len(finished), sorted(set(tasks) - finished), sorted(multi),
                   sum(len(v) for v in by_run.values()), unaccepted, views)
