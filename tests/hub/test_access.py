"""Access decisions and their reasons."""

from __future__ import annotations

import pytest

from adapters.access import Access, Decision
from adapters.platform import ThreadRef
from adapters.state import ChannelPolicy, MemoryStateStore, RunRecord

RUN = RunRecord("r1", ThreadRef("slack", "C1", "1.1"), owner="OWNER", task="t")


@pytest.fixture
def access() -> Access:
    return Access(MemoryStateStore())


def test_open_channel(access: Access) -> None:
    assert access.can_start("slack:C1", "anyone") == Decision(True, "anyone may start runs in this channel")
    assert access.can_answer(RUN, "stranger").ok
    assert access.can_send(RUN, "stranger").ok
    stop = access.can_stop(RUN, "stranger")
    assert not stop and "owner" not in stop.reason and "started this run" in stop.reason
    assert access.can_stop(RUN, "OWNER") == Decision(True, "you started this run")


def test_restricted_channel(access: Access) -> None:
    access.store.set_channel_policy("slack:C1", ChannelPolicy(starters={"S"}, responders={"R"}, admins={"A"}))
    assert access.can_start("slack:C1", "S").ok
    assert access.can_start("slack:C1", "A").reason == "you are an admin of this channel"
    no = access.can_start("slack:C1", "R")
    assert not no.ok and "not allowed to start" in no.reason
    assert access.can_start("slack:C2", "R").ok  # policies are per channel
    assert access.can_answer(RUN, "OWNER").ok  # the owner may answer even if not a responder
    assert access.can_answer(RUN, "R").reason == "you are a responder in this channel"
    assert access.can_answer(RUN, "A").ok
    bad = access.can_answer(RUN, "S")
    assert not bad.ok and bad.reason.endswith("may answer")
    send = access.can_send(RUN, "S")
    assert not send.ok and "send messages" in send.reason
    assert access.can_stop(RUN, "A").ok
    assert not access.can_stop(RUN, "R").ok


def test_policy_of_another_platform_does_not_leak(access: Access) -> None:
    access.store.set_channel_policy("discord:C1", ChannelPolicy(responders=set()))
    assert access.can_answer(RUN, "stranger").ok  # RUN lives on slack:C1
    run = RunRecord("r2", ThreadRef("discord", "C1", "9"), owner="O", task="t")
    assert not access.can_answer(run, "stranger").ok
