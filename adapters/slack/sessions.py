"""Slack agent sessions, driven by each run's status card.

Where the app is declared as an agent, a run's thread is an agent session: `processing` while the
agent works (Slack then shows its own Stop button), `active` while it waits for a person (a question
is open, or a person just interrupted it), `closed` when the run has ended. The status card already
holds the run's state and every change of state edits it, so the surface hands each status card it
sends to `saw_status`; per thread only the latest wanted status is sent, off the outbox's path (a
slow or failing session call never delays the thread), once it has held for `window_s` (a Coalescer:
a question answered within a second flips processing → active → processing and costs no call; the
run's end, `closed`, goes at once).

Where the workspace or app does not support sessions (an old workspace, an app not declared as an
agent, a missing scope), the first refusal is logged once and sessions are off for this process.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from adapters.platform import SLACK, OutMessage, ThreadRef, TransientSurfaceError
from adapters.slack.coalesce import Coalescer
from adapters.slack.errors import error_code, to_surface_error
from adapters.view.status import STATES

__all__ = ["SESSION_STATUS", "AgentSessions"]

log = logging.getLogger(__name__)

# run view state -> agent session status
SESSION_STATUS = {"starting": "processing", "running": "processing", "interrupted": "active", "waiting": "active",
                  "approving": "active", "parked": "active", "parked_approving": "active",
                  "reviewing": "active", "parked_reviewing": "active", "died": "active",
                  "done": "closed", "failed": "closed", "stopped": "closed"}
_STATE_OF_LABEL = {label: state for state, (_icon, label) in STATES.items()}
TITLE_MAX = SLACK.session_title_max

# Describe a run's thread for the session's creation: (title, initiator user id), or None.
Describe = Callable[[ThreadRef], tuple[str, str] | None]


def state_of(msg: OutMessage) -> str | None:
    """The run state a status card shows (its "State" field)."""
    label = dict(msg.fields).get("State")
    return _STATE_OF_LABEL.get(label) if label else None


class AgentSessions:
    def __init__(self, client: Any, *, enabled: bool = True, describe: Describe | None = None,
                 window_s: float = 1.0) -> None:
        self.client = client
        self.enabled = enabled
        self.describe = describe
        self.calls = 0  # setStatus calls made (benches count platform calls)
        self._flips: Coalescer[ThreadRef, str] = Coalescer(self._send, window_s=window_s, name="agent session")
        self._warned: set[str] = set()

    def saw_status(self, thread: ThreadRef, msg: OutMessage) -> None:
        """A status card went out in `thread`. Synchronous, never raises."""
        try:
            state = state_of(msg)
            if state is not None:
                self.want(thread, SESSION_STATUS.get(state, ""))
        except Exception as exc:
            log.warning("agent session update for %s skipped: %r", thread, exc)

    def want(self, thread: ThreadRef, status: str) -> None:
        if not self.enabled or not status or not thread.thread:
            return
        self._flips.put(thread, status, now=status == "closed")

    async def _send(self, thread: ThreadRef, status: str) -> bool:
        if not self.enabled:
            return False
        ok = await self._set(thread, status)
        if ok and status == "closed":  # the run is over: forget the thread
            self._flips.forget(thread)
        return ok and status != "closed"

    async def _set(self, thread: ThreadRef, status: str) -> bool:
        kw: dict[str, Any] = {"channel_id": thread.channel, "thread_ts": thread.thread, "status": status}
        if self._flips.shown(thread) is None and self.describe is not None:
            about = self.describe(thread)
            if about is not None:
                title, initiator = about
                kw["title"] = title[:TITLE_MAX]
                kw["initiator_user_id"] = initiator or None
        self.calls += 1
        try:
            resp = await self.client.agents_sessions_setStatus(**{k: v for k, v in kw.items() if v is not None})
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            err = to_surface_error(exc, "agents.sessions.setStatus")
            if isinstance(err, TransientSurfaceError):
                log.info("agent session %s -> %s not set now (%s); the next change tries again", thread, status, err)
                return False
            self.enabled = False
            log.warning("Slack agent sessions are off for this run of the bot: agents.sessions.setStatus answered "
                        "%s (is the app declared as an agent, with assistant:write?). Everything else works "
                        "without them.", error_code(exc) or err)
            return False
        warning = resp.get("warning") if hasattr(resp, "get") else None
        if warning and warning not in self._warned:
            self._warned.add(str(warning))
            log.warning("agents.sessions.setStatus warns: %s (subscribe to agent_session_stopped in the app's "
                        "event subscriptions so Slack's Stop button reaches the bot)", warning)
        return True

    async def settle(self, timeout: float = 10.0) -> None:
        """Send every status asked for so far now, and wait until sent or given up (bounded)."""
        await self._flips.flush(timeout)

    async def close(self, timeout: float = 5.0) -> None:
        await self._flips.close(timeout)
