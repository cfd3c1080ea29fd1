"""A run's books across SIGKILLs of a real `flower-bot web` process (its whole process group, CLIs too):
what round 1 spent is counted by round 2's cap after a kill between the rounds, and what round 2 had spent
when a kill cut it off is counted again by the wake that brings it back.

The model double runs in this test (it outlives every life of the bot), with every role at Sonnet prices
so the CLI's own cost figures are known: one turn of COSTLY usage is $0.603. The cap is $1:

    round 1   one turn, $0.603, done                          ── SIGKILL, a new life ──
    round 2   continued: one turn crosses the cap ($1.21), the cost cap's question waits
                                                              ── SIGKILL, a new life (the run is woken) ──
              the woken round already stands at $1.21, so it asks again before anything runs
              +$5 → the run ends, the record keeps both rounds and the raised cap
"""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.state import RunRecord, SQLiteStateStore
from tests.conftest import scenario_of
from tests.support.campaign.botproc import BotProcess
from tests.support.fleet_support import Api

pytestmark = pytest.mark.slow

COSTLY = {"input_tokens": 1000, "output_tokens": 40000}  # $0.603 at Sonnet prices
BUDGET_QUESTION = "Budget reached"


def scenario() -> Any:
    return scenario_of({"name": "main", "after_end": "Back: {last_user_text}", "turn": [
        {"say": "Round one.", "usage": COSTLY},
        {"say": "Round two.", "usage": COSTLY, "call": [{"tool": "Read", "input": {"file_path": "notes.md"}}]},
    ]})


def record_of(root: Path, run_id: str) -> RunRecord:
    """The run's record as the bot left it (read between lives, while no bot has the store open)."""
    store = SQLiteStateStore(root / "bot-state.db")
    try:
        record = store.get_run(run_id)
    finally:
        store.close()
    assert record is not None
    return record


@pytest.fixture
async def bot(tmp_path: Path, double_factory: Callable[..., Any], cli_home: Path) -> AsyncIterator[BotProcess]:
    md = await double_factory(scenario())
    env = {**md.env(cli_home), "ANTHROPIC_MODEL": "claude-sonnet-4-5"}
    proc = BotProcess(tmp_path / "root", tmp_path / "bot.log", env, max_runs=2)
    proc.args += ["--budget", "1"]
    try:
        yield proc
    finally:
        await proc.stop()


async def budget_question(api: Api, run_id: str) -> dict[str, Any]:
    async def probe() -> Any:
        asks = await api.get(f"/api/runs/{run_id}/asks")
        return next((a for a in asks if a["question"].startswith(BUDGET_QUESTION)), None)
    found: dict[str, Any] = await api.until("the cost cap's question", probe, timeout=90)
    return found


async def test_spend_survives_a_sigkill_between_rounds_and_a_wake(bot: BotProcess, tmp_path: Path) -> None:
    root = tmp_path / "root"
    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        run_id = await api.start("spend")
        assert (await api.ended(run_id))["status"] == "done", bot.tail()
    await bot.kill(signal.SIGKILL)
    one = record_of(root, run_id)
    assert one.spent_usd == pytest.approx(0.603, abs=0.01), one

    await bot.start()
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        status, body = await api.post(f"/api/runs/{run_id}/continue", {"text": "spend some more"})
        assert status == 200 and body["round"] == 2, body
        asked = await budget_question(api, run_id)
        assert "$1.21" in asked["question"] and "$1.00" in asked["question"], asked  # round 1 counted
    await bot.kill(signal.SIGKILL)  # round 2 cut off while its cap question waits
    cut = record_of(root, run_id)
    assert cut.round == 2 and cut.spent_usd == pytest.approx(1.206, abs=0.02), cut  # kept as it was spent

    await bot.start()  # the run is woken: its books start where the killed life left them
    async with aiohttp.ClientSession() as session:
        api = Api(session, bot.base)
        again = await budget_question(api, run_id)
        assert "$1.21" in again["question"], again
        status, body = await api.post(f"/api/runs/{run_id}/answer", {"ask_id": again["id"], "text": "+$5"})
        assert status == 200 and body["ok"], body
        done = await api.ended(run_id)
        assert done["status"] == "done" and done["round"] == 2, (done, bot.tail())
        events = await api.events(run_id)
    raised = [e for e in events if e["kind"] == "system" and e["payload"].get("phase") == "raised"]
    assert raised and raised[-1]["payload"]["cap"] == pytest.approx(6.0), json.dumps(raised)
    await bot.kill(signal.SIGTERM)
    two = record_of(root, run_id)
    assert two.cap_usd == pytest.approx(6.0) and two.spent_usd >= 1.2, two
