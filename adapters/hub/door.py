"""The door: every intent of every platform goes through one pipeline, which decides in this order.

```
submit(intent, actor, delivery_id=, where=)
  1. a click's id           decoded (adapters.ids); not ours → "That button is not one of mine (…)"
  2. duplicate delivery     a delivery id seen before → ok, "Already handled." (duplicate): nothing new
  3. which intent           a click → the intent its verb names, or the form to open first (after the
                            permission the form's words will need); a plain message → answer, oracle,
                            mail or next round (routing.py); a thread that holds no run → ignored
  4. which run              the intent's run_id → its record ("No run r1." when there is none)
  5. who may                intents.PERMISSIONS → Access; a refusal is told to the actor alone
  6. handler                handlers.py, mirrors.py (Follow, Unfollow), rounds.py (Continue, Resume),
                            intake.py (Attach), steering.py (Steer), undo.py (Undo), routines.py
                            (AddRoutine, RoutineAction): each applies only what is its own
  7. what the person hears  the IntentResult: `to_show(quiet_when_ok=)` is the one rule (results.py)
```

A platform parses, submits and renders; it never asks "may they?" before acting, only before it opens
a form or a thread (hub.query), and it never routes a verb itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from adapters.access import Access
from adapters.hub.cards import CardRules
from adapters.hub.files import Attached
from adapters.hub.handlers import CardHandler, RunHandler, StartHandler
from adapters.hub.intake import FileIntake
from adapters.hub.intents import (
    PERMISSIONS,
    AddRoutine,
    Answer,
    Approve,
    Attach,
    Click,
    Continue,
    Decline,
    Follow,
    Intent,
    Interrupt,
    Oracle,
    Resume,
    RoutineAction,
    RunIntent,
    Said,
    Send,
    ShowFiles,
    Start,
    Steer,
    Stop,
    Undo,
    Unfollow,
    Wake,
)
from adapters.hub.mirrors import Mirrors
from adapters.hub.platforms import Platforms
from adapters.hub.registry import RunRegistry
from adapters.hub.results import IntentResult
from adapters.hub.rounds import Rounds
from adapters.hub.routines import RoutineHandler
from adapters.hub.routing import NOT_MINE, WordsFirst, click, said
from adapters.hub.steering import SteerHandler
from adapters.hub.undo import UndoHandler
from adapters.ids import IdError, decode
from adapters.platform import ThreadRef
from adapters.state import RunRecord, StateStore

__all__ = ["Door", "Handlers"]


@dataclass(frozen=True)
class Handlers:
    """Who does each intent's work once the door has let it through (see the table in intents.py)."""

    starts: StartHandler
    cards: CardHandler
    runs: RunHandler
    mirrors: Mirrors  # Follow, Unfollow
    rounds: Rounds  # Continue, Resume
    intake: FileIntake  # Attach
    steers: SteerHandler  # Steer
    undos: UndoHandler  # Undo
    routines: RoutineHandler  # AddRoutine, RoutineAction


class Door:
    def __init__(self, store: StateStore, registry: RunRegistry, cards: CardRules, access: Access, platforms: Platforms,
                 handlers: Handlers) -> None:
        self.store, self.registry, self.cards, self.access, self.platforms = store, registry, cards, access, platforms
        self.refuse = platforms.refuse
        self.starts, self.card_handler, self.run_handler = handlers.starts, handlers.cards, handlers.runs
        self.mirrors, self.rounds, self.intake = handlers.mirrors, handlers.rounds, handlers.intake
        self.steers, self.undos, self.routines = handlers.steers, handlers.undos, handlers.routines

    async def submit(self, intent: Intent, actor: str, *, delivery_id: str | None = None,
                     where: ThreadRef | None = None) -> IntentResult:
        if isinstance(intent, Click):
            try:
                action = decode(intent.action_id)
            except IdError as exc:
                return IntentResult(False, f"{NOT_MINE} ({exc}).")
        if delivery_id and self.store.seen(f"delivery:{delivery_id}"):
            run_id = action.run_id if isinstance(intent, Click) else getattr(intent, "run_id", "")
            return IntentResult(True, "Already handled.", run_id, duplicate=True)
        if isinstance(intent, Click):
            routed = click(action, intent, self.cards)
            if isinstance(routed, IntentResult):
                return routed
            if isinstance(routed, WordsFirst):
                return await self._form(routed, actor)
            intent = routed
        if isinstance(intent, Said):
            if where is None:
                raise ValueError("a plain message needs the thread it was said in (where=)")
            found = said(intent, where, self.registry, self.cards)
            if found is None:
                return IntentResult(False, "", ignored=True)
            intent = found
        if isinstance(intent, Start):
            return await self._start(intent, actor, where)
        if isinstance(intent, AddRoutine):
            return await self._add_routine(intent, actor, where)
        if isinstance(intent, RoutineAction):
            return await self._routine(intent, actor)
        if isinstance(intent, Unfollow):
            if where is None:
                raise ValueError("Unfollow needs the thread that follows (where=)")
            return await self.mirrors.unfollow(where, actor)
        return await self._on_run(intent, actor, where)

    async def _form(self, first: WordsFirst, actor: str) -> IntentResult:
        """A button that wants words: the form opens only for someone its words may come from."""
        record = self.store.get_run(first.run_id)
        if record is None:
            return IntentResult(False, f"No run {first.run_id}.", first.run_id)
        decision = self.access.decide(first.permission, record, actor)
        if not decision:
            return await self.refuse(record.thread, actor, decision.reason, first.run_id)
        form = first.form
        return IntentResult(True, form.prompt, first.run_id, needs_input=form.prompt, form=form)

    async def _start(self, start: Start, actor: str, where: ThreadRef | None) -> IntentResult:
        if where is None:
            raise ValueError("Start needs the thread the run will live in (where=)")
        if not self.platforms.has(where.platform):
            return IntentResult(False, f"No surface for platform {where.platform!r}.")
        decision = self.access.can_start(f"{where.platform}:{where.channel}", actor)
        if not decision:
            return await self.refuse(where, actor, decision.reason, "")
        return await self.starts.start(start, where, actor)

    async def _add_routine(self, add: AddRoutine, actor: str, where: ThreadRef | None) -> IntentResult:
        if where is None:
            raise ValueError("AddRoutine needs the channel its runs will appear in (where=)")
        if not self.platforms.has(where.platform):
            return IntentResult(False, f"No surface for platform {where.platform!r}.")
        decision = self.access.can_start(f"{where.platform}:{where.channel}", actor)  # ROUTINE_PERMISSIONS: start
        if not decision:
            return await self.refuse(where, actor, decision.reason, "")
        return await self.routines.add(add, where, actor)

    async def _routine(self, action: RoutineAction, actor: str) -> IntentResult:
        routine = self.store.get_routine(action.routine_id)
        if routine is None:
            return IntentResult(False, f"No routine {action.routine_id!r}; listing the routines shows their ids.",
                                routine_id=action.routine_id)
        place = routine.place
        decision = self.access.can_manage(f"{place.platform}:{place.channel}", routine.owner, actor)  # "manage"
        if not decision:
            return await self.refuse(place, actor, decision.reason, "")
        return await self.routines.act(action, routine, actor)

    async def _on_run(self, intent: RunIntent, actor: str, where: ThreadRef | None) -> IntentResult:
        record = self.store.get_run(intent.run_id)
        if isinstance(intent, Follow | Resume):  # what seeing a run takes, said as what was refused
            return await self._show(intent, record, actor, where)
        if record is None:
            return IntentResult(False, f"No run {intent.run_id}.", intent.run_id)
        permission = PERMISSIONS.get(type(intent))
        if permission is not None and not (decision := self.access.decide(permission, record, actor)):
            return await self.refuse(record.thread, actor, decision.reason, intent.run_id)
        return await self._handle(intent, record, actor, where)

    async def _show(self, intent: Follow | Resume, record: RunRecord | None, actor: str,
                    where: ThreadRef | None) -> IntentResult:
        if where is None:
            raise ValueError(f"{type(intent).__name__} needs the thread to show the run in (where=)")
        if isinstance(intent, Resume):
            return await self.rounds.resume(intent.run_id, where, actor, intent.text, submit=self.submit)
        may = self.mirrors.followable(intent.run_id, actor)
        if not may.ok or record is None:
            return await self.refuse(where, actor, may.message, intent.run_id)
        return await self.mirrors.follow(record, where, actor)

    async def _handle(self, intent: RunIntent, record: RunRecord, actor: str, where: ThreadRef | None) -> IntentResult:
        cards, runs = self.card_handler, self.run_handler
        match intent:
            case Answer():
                return await cards.answer(intent, record, actor, where)
            case Decline():
                return await cards.decline(intent, record, actor, where)
            case Approve():
                return await cards.approve(intent, record, actor, where)
            case Send():
                return await runs.send(intent, record, actor, where)
            case Attach():
                return await self.intake.attach(record, intent.files, intent.text, actor, origin=intent.origin,
                                                where=where, live=self.registry.is_live(record.run_id),
                                                submit=self.submit)
            case Interrupt():
                return await runs.interrupt(intent, record, actor)
            case Oracle():
                return await runs.oracle(intent, record, actor)
            case Stop():
                return await runs.stop(intent, record, actor)
            case Steer():
                return await self.steers.steer(intent, record, actor)
            case Undo():
                return await self.undos.undo(intent, record, actor, where)
            case Wake():
                return await runs.wake(intent, record, actor)
            case Continue():
                return await self.rounds.continue_run(record, intent.text, actor, where=where)
            case ShowFiles():
                return await runs.show_files(record, actor, where)
        raise TypeError(f"no handler for {type(intent).__name__}")  # a new intent type, not yet routed


def attached(result: IntentResult) -> Attached:
    """An Attach's result as what it is (a refusal before the intake is an Attached with no files)."""
    return result if isinstance(result, Attached) else Attached.of(result)
