"""The real Slack bot (SlackFrontend: AsyncApp + Socket Mode) wired to a hub on the model double and
connected to the Slack double."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from adapters.hub import Hub
from adapters.slack import SlackFrontend, SlackSettings
from adapters.state import MemoryStateStore, StateStore
from tests.support.hub_support import hub_of, make_hub
from tests.support.slack_double import APP_TOKEN, BOT_TOKEN, Msg, SlackDouble

C1 = "C0000001"


@dataclass
class Bot:
    frontend: SlackFrontend
    hub: Hub
    store: StateStore


def settings_for(double: SlackDouble, **kw: Any) -> SlackSettings:
    kw = {"bot_token": BOT_TOKEN, "app_token": APP_TOKEN, "api_url": double.api_url, **kw}
    return SlackSettings(**kw)


@asynccontextmanager
async def slack_bot(tmp_path: Path, md: Any, cli_home: Path, double: SlackDouble, *,
                    store: StateStore | None = None, settings: SlackSettings | None = None,
                    **hub_kw: Any) -> AsyncIterator[Bot]:
    """A started bot; at exit the hub closes (runs stop as on shutdown) and the connection goes."""
    frontend = SlackFrontend(settings or settings_for(double))
    store = store if store is not None else MemoryStateStore()
    if md is None:
        hub = hub_of(frontend.surface, store, root=tmp_path / "runs", **hub_kw)
    else:
        hub = make_hub(tmp_path, md, cli_home, frontend.surface, store, **hub_kw)
    frontend.attach(hub)
    await frontend.start()
    await hub.recover()
    try:
        yield Bot(frontend, hub, store)
    finally:
        await hub.close()
        await frontend.stop()


def root_of(double: SlackDouble, channel: str = C1) -> Msg:
    roots = double.roots(channel)
    assert roots, "no root message in the channel"
    return roots[-1]


def card(double: SlackDouble, channel: str, root: str, question: str, *, open_: bool = True) -> Msg | None:
    """The ask card asking `question`, once it shows buttons (open_) or none (settled)."""
    return double.find(channel, root, lambda m: question in m.body() and m.header() != ""
                       and bool(m.buttons()) == open_ and ("Question" in m.header()) == open_)
