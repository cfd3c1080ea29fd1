"""A bounded fleet campaign (tests/support/campaign_support.py): a dozen random kills of workers, the front and
Redis — one Redis outage longer than dead-after, workers restarted under their old names — against real
processes, with answers and interrupts through the HTTP API and the model double in this process.

Held to, always: no run ends up with two holders acting at once, none is stuck, a killed worker's runs
are held again within dead-after + 1 s at p95. Held to once the engine replays its intent log (the
durable-intents engine: `RunEngine.apply`): every accepted answer and interrupt reached the model exactly
once. Until then those counts are reported (xfail) rather than asserted: the worker settles as soon as it
has applied in memory, which a kill right after can lose. `bench/bench_fleet_campaign.py` runs 100 kills."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.transport.engine import RunEngine
from tests.support.campaign_support import Campaign

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

DEAD_AFTER_S = 2.0
ENGINE_REPLAYS = callable(getattr(RunEngine, "apply", None))


async def test_twelve_kills(tmp_path: Path) -> None:
    campaign = Campaign(tmp_path, kills=12, seed=2025, dead_after_s=DEAD_AFTER_S)
    report = await campaign.run()
    table = "\n".join([report.table(), *report.lost()])
    print(table)
    assert sum(report.kills.values()) == 12 and report.kills["redis"] >= 1, table
    assert report.answers and report.runs, table  # the campaign did something
    assert not report.two_holders, table
    assert not report.stuck, table
    if report.takeovers:
        p95 = sorted(report.takeovers)[max(0, round(0.95 * (len(report.takeovers) - 1)))]
        assert p95 <= DEAD_AFTER_S + 1.0, table
    _total, _once, lost, dup = report.count(report.answers)
    _i_total, _i_once, i_lost, i_dup = report.count(report.interrupts)
    if lost or dup or i_lost or i_dup:
        if not ENGINE_REPLAYS:
            pytest.xfail(f"inputs lost or applied twice, until the engine replays its intent log:\n{table}")
        raise AssertionError(table)
