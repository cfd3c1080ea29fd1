"""A channel's budget ceiling: the cap a run gets when none was asked for, and a refusal above it."""

from __future__ import annotations

from pathlib import Path

from adapters.hub import Hub, RunOptions
from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from adapters.state import MemoryStateStore
from bots.bot import build_parser
from bots.config import load_config
from tests.support.drive import drive
from tests.support.hub_support import hub_of

THREAD = ThreadRef("memory", "C1", "t1")


def hub_with(tmp_path: Path, surface: MemorySurface, **kw: object) -> Hub:
    return hub_of(surface, MemoryStateStore(), root=tmp_path, budget_ceilings={"memory:C1": 20.0}, **kw)  # type: ignore[arg-type]


async def test_a_starter_cannot_ask_for_more_than_the_channel_allows(tmp_path: Path) -> None:
    surface = MemorySurface()
    hub = hub_with(tmp_path, surface)
    refused = await drive(hub).start("spend big", THREAD, "ana", options=RunOptions(budget_usd=50.0))
    assert not refused.ok and "caps a run's budget at $20.00" in refused.message
    assert hub.store.list_runs() == [] and not surface.messages  # nothing started, nothing posted
    assert surface.notices_for("ana") == [refused.message]


def test_the_ceiling_fills_in_a_missing_cap_and_keeps_a_smaller_one() -> None:
    assert RunOptions().within(20.0, default=None) == (RunOptions(budget_usd=20.0), None)
    assert RunOptions(budget_usd=5.0).within(20.0, default=None) == (RunOptions(budget_usd=5.0), None)
    assert RunOptions().within(None, default=None) == (RunOptions(), None)  # no ceiling: nothing changes
    assert RunOptions().within(20.0, default=30.0)[1] is not None  # the bot's default is over it too


def test_the_ceiling_comes_from_the_channel_table(tmp_path: Path) -> None:
    path = tmp_path / "bot.toml"
    path.write_text('[channels."slack:C1"]\nmax_budget_usd = 20\n', encoding="utf-8")
    cfg = load_config(build_parser().parse_args(["--config", str(path)]), {})
    assert cfg.channels[0].max_budget_usd == 20.0
