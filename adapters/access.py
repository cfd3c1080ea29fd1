"""Who may start, answer, send to and stop runs — decisions with reasons a human can read.

Policies are per channel (use "platform:channel", e.g. "slack:C123", so platforms never collide)
and live in the state store. No policy means an open channel: anyone may start and answer. A policy
entry may name a group a platform reported for the user (e.g. a Discord role, "role:123").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from adapters.people import People
from adapters.state.base import ChannelPolicy, RunRecord, StateStore

__all__ = ["Access", "ChannelPolicy", "Decision", "Permission", "RunPermission"]

RunPermission = Literal["answer", "send", "stop"]
Permission = Literal["start"] | RunPermission

_OPEN = ChannelPolicy()


@dataclass(frozen=True)
class Decision:
    ok: bool
    reason: str

    def __bool__(self) -> bool:
        return self.ok


class Access:
    """Access checks over a StateStore. A run's policy is the one stored for its thread's
    "platform:channel"; `Decision` is truthy when allowed and its reason is fit to show the user."""

    def __init__(self, store: StateStore, people: People | None = None) -> None:
        self.store = store
        self.people = people or People()

    def _member(self, user: str, allowed: frozenset[str]) -> bool:
        return user in allowed or bool(self.people.groups(user) & allowed)

    def policy(self, channel: str) -> ChannelPolicy:
        return self.store.get_channel_policy(channel) or _OPEN

    @staticmethod
    def channel_of(run: RunRecord) -> str:
        return f"{run.thread.platform}:{run.thread.channel}"

    def can_start(self, channel: str, user: str) -> Decision:
        p = self.policy(channel)
        if self._member(user, p.admins):
            return Decision(True, "you are an admin of this channel")
        if p.starters is None:
            return Decision(True, "anyone may start runs in this channel")
        if self._member(user, p.starters):
            return Decision(True, "you are allowed to start runs in this channel")
        return Decision(False, "you are not allowed to start runs in this channel; ask a channel admin")

    def can_manage(self, channel: str, owner: str, user: str) -> Decision:
        """A routine of `owner` in `channel`: its owner while they may still start runs there, or an admin."""
        if self._member(user, self.policy(channel).admins):
            return Decision(True, "you are an admin of this channel")
        if user != owner:
            return Decision(False, "only the routine's owner or a channel admin may change it")
        started = self.can_start(channel, user)
        return started if started.ok else Decision(False, "you may no longer start runs in this channel; ask a "
                                                   "channel admin")

    def can_answer(self, run: RunRecord, user: str) -> Decision:
        if user == run.owner:
            return Decision(True, "you started this run")
        p = self.policy(self.channel_of(run))
        if self._member(user, p.admins):
            return Decision(True, "you are an admin of this channel")
        if p.responders is None:
            return Decision(True, "anyone in this channel may answer")
        if self._member(user, p.responders):
            return Decision(True, "you are a responder in this channel")
        return Decision(False, "only the person who started this run, channel responders and admins may answer")

    def can_send(self, run: RunRecord, user: str) -> Decision:
        # Mail and interrupts steer the run as much as answers do: same people.
        d = self.can_answer(run, user)
        return d if d.ok else Decision(False, d.reason.replace("may answer", "may send messages to this run"))

    def can_stop(self, run: RunRecord, user: str) -> Decision:
        if user == run.owner:
            return Decision(True, "you started this run")
        if self._member(user, self.policy(self.channel_of(run)).admins):
            return Decision(True, "you are an admin of this channel")
        return Decision(False, "only the person who started this run or a channel admin may stop it")

    def decide(self, permission: RunPermission, run: RunRecord, user: str) -> Decision:
        """One of the three run permissions, by name (the door's table: adapters/hub/intents.py)."""
        checks = {"answer": self.can_answer, "send": self.can_send, "stop": self.can_stop}
        return checks[permission](run, user)
