"""Mail: something the human said on their own initiative, waiting in the inbox."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from flower_core.events import Event


@dataclass
class Mail:
    """One inbox message. state is "queued" until the model takes it with the inbox tool."""

    id: str
    text: str
    sent_at: float = field(default_factory=time.time)
    state: str = "queued"
    amended: str = ""  # the file the text was appended to (the brief, usually); "" when it was not
    delivered_at: float | None = None

    @property
    def taken(self) -> bool:
        """True once the model has read it through the inbox tool (the original flower's field name)."""
        return self.state == "delivered"

    def event(self) -> Event:
        return Event(
            "ask",
            text=self.text,
            payload={"kind": "mail", "state": self.state, "id": self.id, "amended": self.amended},
            raw=self,
        )
