"""FileIntake: `Attach`'s handler — files checked and saved in the run's inbox/, then one mail (files.py).

    Attach ─▶ asleep run: refused (wake it first)
           ─▶ check + save (files.py), one upload at a time per run so the run's limit holds
           ─▶ Send (live run) or Continue (ended run) through the door; a refused mail removes the files
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from adapters.hub.files import Attached, Incoming, UploadRefused, check, inbox_used, mail_text, remove, save
from adapters.hub.intents import Continue, Send, Submit
from adapters.hub.registry import has_ended
from adapters.hub.results import Refuse
from adapters.hub.settings import UploadLimits
from adapters.platform import ThreadRef
from adapters.state import RunRecord

__all__ = ["FileIntake"]



class FileIntake:
    """`Attach`'s handler, once the door has checked who may write to the run."""

    def __init__(self, limits: UploadLimits, per_channel: Mapping[str, UploadLimits], *, refuse: Refuse,
                 who: Callable[[str], str]) -> None:
        self.limits, self.per_channel = limits, dict(per_channel)
        self.refuse, self.who = refuse, who
        self._locks: dict[str, asyncio.Lock] = {}  # one upload at a time per run: the run's limit holds

    def limits_for(self, record: RunRecord, where: ThreadRef | None) -> UploadLimits:
        for thread in (where, record.thread):
            if thread is not None and (found := self.per_channel.get(f"{thread.platform}:{thread.channel}")):
                return found
        return self.limits

    async def attach(self, record: RunRecord, files: Sequence[Incoming], text: str, user: str, *,
                     origin: str, where: ThreadRef | None, live: bool, submit: Submit) -> Attached:
        """`live`: the run is live here (its mail is inbox mail, else it starts the next round); `submit`:
        the door the mail goes through."""
        run_id, here = record.run_id, where or record.thread
        ended = has_ended(record)
        if not live and not ended:
            return Attached.of(await self.refuse(here, user, f"Run {run_id} is asleep ({record.status}); wake it "
                                                "first, then attach the files again.", run_id))
        workspace = Path(record.workspace)
        lock = self._locks.setdefault(run_id, asyncio.Lock())
        async with lock:
            try:
                check(files, self.limits_for(record, where), await asyncio.to_thread(inbox_used, workspace))
                saved = await asyncio.to_thread(save, workspace, files)
            except UploadRefused as exc:
                return Attached.of(await self.refuse(here, user, f"Not attached: {exc}.", run_id),
                                   problem="too_large" if exc.too_large else "bad_file")
            except OSError as exc:
                return Attached.of(await self.refuse(here, user, f"Not attached: the run's workspace cannot take "
                                                    f"files ({exc.strerror or exc}).", run_id))
        mail = mail_text(saved, self.who(user), text)
        if live:
            result = await submit(Send(run_id, mail, origin=origin), user, where=where)
        else:
            result = await submit(Continue(run_id, mail), user, where=where)
        if not result.ok:  # the hub refused and said why; the files go with the refusal
            await asyncio.to_thread(remove, workspace, saved)
            return Attached.of(result)
        return Attached.of(result, saved)
