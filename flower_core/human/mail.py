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
    amended: bool = False
    delivered_at: float | None = None

    def event(self) -> Event:
        return Event(
            "ask",
            text=self.text,
            payload={"kind": "mail", "state": self.state, "id": self.id, "amended": self.amended},
            raw=self,
        )
