"""Receipts: inbox mail as it goes from queued to delivered, with who sent it."""

from __future__ import annotations

import adapters.view.fmt as fmt
import adapters.view.notices as notices
from adapters.platform import OutMessage
from flower_core.payloads import MailPayload


class Receipts:
    """The channel emits a mail's "queued" event inside send(), before the hub knows the mail id;
    so the hub says `expect(user)` first, and `sent()` after as a fallback."""

    def __init__(self, epoch: str, who: fmt.Who) -> None:
        self.epoch, self.who = epoch, who
        self._queued: dict[str, tuple[str, str, bool]] = {}  # mail id -> (text, sender, amended); dropped on delivery
        # mail id -> (the sender's own platform message, the thread it was written in); dropped on delivery
        self._origins: dict[str, tuple[str, str]] = {}
        self._next_by, self._next_origin = "", ("", "")

    def key(self, mail_id: str) -> str:
        return f"mail:{self.epoch}:{mail_id}"

    def expect(self, user: str, origin: str = "", only_in: str = "") -> None:
        self._next_by, self._next_origin = user, (origin, only_in)

    def sent(self, mail_id: str, user: str) -> list[OutMessage]:
        entry = self._queued.get(mail_id)
        self._next_by, self._next_origin = "", ("", "")
        if entry is None or entry[1] == user:
            return []
        self._queued[mail_id] = (entry[0], user, entry[2])
        origin, only_in = self._origins.get(mail_id, ("", ""))
        return [notices.receipt(self.key(mail_id), entry[0], "queued", by=user, amended=entry[2], who=self.who,
                                origin=origin, only_in=only_in)]

    def event(self, text: str, mail: MailPayload) -> OutMessage:
        mail_id, state = mail.id, mail.state or "queued"
        text, by, amended = self._queued.get(mail_id, (text, "", False))
        if state == "queued" and not by:
            by, self._next_by = self._next_by, ""
            if any(self._next_origin):
                self._origins[mail_id], self._next_origin = self._next_origin, ("", "")
        amended = amended or mail.amended
        origin, only_in = self._origins.get(mail_id, ("", ""))
        if state == "queued":
            self._queued[mail_id] = (text, by, amended)
        else:
            self._queued.pop(mail_id, None)
            self._origins.pop(mail_id, None)
        return notices.receipt(self.key(mail_id), text, state, by=by, amended=amended, who=self.who, origin=origin,
                               only_in=only_in)
