"""UndoHandler: the summary card's "Undo changes…" (the `Undo` intent).

Without a checkpoint it lists the run's checkpoints (checkpoints.py) in the thread, each with the files it
would put back and a Restore button: the listing is the confirmation step. With one it restores the workspace
to it and keeps a note the agent reads at the start of its next turn. The door has checked that the person
started the run or administers its channel (permission "stop"). Refused while the run is live (its agent may
be writing), and while another live run works in the same workspace.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from adapters.hub.admission import Admission
from adapters.hub.checkpoints import Checkpoint, Checkpoints
from adapters.hub.intents import Undo
from adapters.hub.outboxes import Outboxes
from adapters.hub.registry import RunRegistry
from adapters.hub.results import IntentResult, Refuse
from adapters.ids import encode
from adapters.platform import ThreadRef
from adapters.platform.messages import Button, OutMessage
from adapters.state import RunRecord
from adapters.view import fmt

__all__ = ["LISTED", "UndoHandler", "checkpoint_list"]

LISTED = 4  # checkpoints offered with a Restore button, newest first (Discord rows hold 5)
NAMED = 8  # files named per checkpoint


class UndoHandler:
    def __init__(self, registry: RunRegistry, admission: Admission, outboxes: Outboxes, refuse: Refuse) -> None:
        self.registry, self.admission, self.outboxes, self.refuse = registry, admission, outboxes, refuse

    async def undo(self, undo: Undo, record: RunRecord, user: str, where: ThreadRef | None) -> IntentResult:
        run_id, thread = record.run_id, where or record.thread
        if self.registry.is_live(run_id):
            return await self.refuse(thread, user, f"Run {run_id} is still going: stop it first, then undo.", run_id)
        if (busy := self.admission.busy(Path(record.workspace))) is not None:
            return await self.refuse(thread, user, f"Run {busy} is working in the same workspace: undo waits until "
                                     "it has ended.", run_id)
        points = Checkpoints(record.run_dir, record.workspace)
        if not undo.checkpoint:
            return await self._list(points, record, thread, user)
        cp = await asyncio.to_thread(points.get, undo.checkpoint)
        if cp is None:
            return await self.refuse(thread, user, f"Run {run_id} has no checkpoint {undo.checkpoint!r}.", run_id)
        done = await asyncio.to_thread(points.restore, cp)
        if not done:
            return IntentResult(True, f"Nothing to undo: the workspace already matches checkpoint {cp.id}.", run_id)
        shown = ", ".join(done[:NAMED]) + (f" and {len(done) - NAMED} more" if len(done) > NAMED else "")
        points.note(f"[The person you work for undid changes: the workspace's files were put back as they were at "
                    f"checkpoint {cp.id} ({cp.label}). Restored or removed: {', '.join(done)}. Read them again "
                    "before relying on what you remember of them.]")
        await self.outboxes.say(thread, [OutMessage(f"undone:{run_id}:{cp.id}:{int(time.time())}", "notice",
                                                    f"↩️ Restored the workspace to checkpoint {cp.id} ({cp.label}): "
                                                    f"{shown}. The agent hears of it in its next turn.",
                                                    replace=False)])
        return IntentResult(True, f"Restored {len(done)} file(s) to checkpoint {cp.id}.", run_id)

    async def _list(self, points: Checkpoints, record: RunRecord, thread: ThreadRef, user: str) -> IntentResult:
        listed = await asyncio.to_thread(checkpoint_list, points)
        offered = [(cp, files) for cp, files in listed if files]
        if not offered:
            return await self.refuse(thread, user, f"Nothing to undo in run {record.run_id}: the workspace matches "
                                     "every checkpoint (or none was taken).", record.run_id)
        lines = [f"↩️ **Undo changes of run {record.run_id}**: a checkpoint puts the workspace's files back as they "
                 "were then (files made since are removed). Press one to restore it."]
        for cp, files in offered[:LISTED]:
            named = ", ".join(files[:NAMED]) + (f" and {len(files) - NAMED} more" if len(files) > NAMED else "")
            lines.append(f"• {cp.id} · {cp.label} · {time.strftime('%H:%M UTC', time.gmtime(cp.at))} — "
                         f"restores {len(files)} file(s): {fmt.one_line(named, 300)}")
        buttons = [Button(f"Restore {cp.id}", encode("rst", record.run_id, cp.id), "danger")
                   for cp, _ in offered[:LISTED]]
        await self.outboxes.say(thread, [OutMessage(f"undo:{record.run_id}:{int(time.time())}", "notice",
                                                    "\n".join(lines), buttons=buttons, replace=False)])
        return IntentResult(True, f"Listed {min(len(offered), LISTED)} checkpoint(s) of run {record.run_id}.",
                            record.run_id)


def checkpoint_list(points: Checkpoints) -> list[tuple[Checkpoint, list[str]]]:
    """Every checkpoint, newest first, with the files restoring it would put back (blocking)."""
    return [(cp, points.would_restore(cp)) for cp in reversed(points.all())]
