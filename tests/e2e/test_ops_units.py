"""Operations, the pure parts: configuration of the new switches, the JSON log line and its run id, the
filter that keeps a planned shutdown free of the SDK's exit-code errors (and nothing else), what
counts as a 429, what the metrics count from events, and readiness over probes that fail or hang."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.ops.health import Health
from adapters.ops.metrics import Metrics, is_rate_limit
from adapters.ops.procs import cli_children, descendants
from adapters.ops.runlog import RUN_ID, run_context
from adapters.platform import PermanentSurfaceError, TransientSurfaceError
from bots import worker
from bots.bot import build_parser
from bots.config import BotConfig, ConfigError, load_config
from bots.logs import JsonFormatter
from bots.shutdown import QuietPlannedExits, StopClock
from flower_core import Event

ROOT = Path(__file__).resolve().parents[2]


def config(argv: list[str], env: dict[str, str] | None = None, toml: str = "",
           tmp_path: Path | None = None) -> BotConfig:
    if toml:
        assert tmp_path is not None
        (tmp_path / "bot.toml").write_text(toml, encoding="utf-8")
        argv = [*argv, "--config", str(tmp_path / "bot.toml")]
    return load_config(build_parser().parse_args(argv), env or {})


# ---- configuration ------------------------------------------------------------------------------------
def test_the_ops_switches_come_from_flags_then_environment_then_file(tmp_path: Path) -> None:
    plain = config([])
    assert (plain.health_port, plain.log_format, plain.stop_after_s, plain.wake_on_start) == (None, "text", 10.0, True)
    toml = "[bot]\nhealth_port = 9100\nlog_format = 'json'\nstop_after_s = 4\nwake_on_start = false\n"
    from_file = config([], {}, toml, tmp_path)
    assert (from_file.health_port, from_file.log_format, from_file.stop_after_s, from_file.wake_on_start) == \
        (9100, "json", 4.0, False)
    env = {"FLOWER_HEALTH_PORT": "9200", "FLOWER_LOG_FORMAT": "text"}
    assert (config([], env, toml, tmp_path).health_port, config([], env, toml, tmp_path).log_format) == (9200, "text")
    flags = config(["--health-port", "0", "--log-format", "json", "--stop-after", "2.5", "--no-wake"], env)
    assert (flags.health_port, flags.log_format, flags.stop_after_s, flags.wake_on_start) == (0, "json", 2.5, False)


@pytest.mark.parametrize(("argv", "env", "toml", "says"), [
    ([], {"FLOWER_HEALTH_PORT": "http"}, "", "health port must be a number"),
    (["--health-port", "70000"], {}, "", "health port must be between 0 and 65535"),
    ([], {"FLOWER_LOG_FORMAT": "xml"}, "", "log format must be one of text, json"),
    (["--stop-after", "0"], {}, "", "stop_after_s must be a number of seconds above 0"),
    (["--stop-after", "nan"], {}, "", "stop_after_s must be a number of seconds above 0"),
    ([], {}, "[bot]\nwake_on_start = 'yes'\n", "[bot].wake_on_start must be true or false"),
    ([], {}, "[bot]\nhealth_port = true\n", "[bot].health_port must be a number"),
])
def test_bad_ops_settings_are_one_line(tmp_path: Path, argv: list[str], env: dict[str, str], toml: str,
                                       says: str) -> None:
    with pytest.raises(ConfigError) as err:
        config(argv, env, toml, tmp_path)
    assert says in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(("argv", "says"), [
    (["--stop-after", "-1"], "stop_after_s must be a number of seconds above 0"),
    (["--log-format", "json", "--health-port", "99999"], "health port must be between 0 and 65535"),
])
def test_flower_worker_refuses_bad_ops_flags_in_one_line(argv: list[str], says: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "bots.worker", "--redis", "redis://127.0.0.1:1/0", *argv],
                          capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert done.returncode == 2 and says in done.stderr and done.stderr.strip().count("\n") == 0
    assert worker.build_parser().parse_args(["--redis", "redis://x:1/0"]).stop_after == 10.0


# ---- log lines ----------------------------------------------------------------------------------------
def _record(msg: str, *, name: str = "flower.test", level: int = logging.INFO, exc: bool = False) -> logging.LogRecord:
    exc_info = None
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            exc_info = sys.exc_info()
    return logging.LogRecord(name, level, __file__, 1, msg, (), exc_info)


def test_a_json_line_has_time_level_logger_message_and_the_run_id_only_inside_a_run() -> None:
    fmt = JsonFormatter()
    outside = json.loads(fmt.format(_record("two\nlines")))
    assert set(outside) == {"time", "level", "logger", "message"} and outside["message"] == "two\nlines"
    assert outside["level"] == "INFO" and outside["logger"] == "flower.test" and outside["time"].endswith("Z")
    inside = run_context("r1234abcd").run(lambda: json.loads(fmt.format(_record("in the run"))))
    assert inside["run_id"] == "r1234abcd" and RUN_ID.get() == ""  # the caller's context is untouched
    failed = json.loads(fmt.format(_record("it broke", level=logging.ERROR, exc=True)))
    assert "ValueError: boom" in failed["exc"] and "\n" not in fmt.format(_record("it broke", exc=True))


async def test_tasks_started_by_a_run_carry_its_id() -> None:
    seen: list[str] = []

    async def child() -> None:
        seen.append(RUN_ID.get())

    async def run_main() -> None:
        await asyncio.create_task(child())  # e.g. the SDK's message reader
        seen.append(RUN_ID.get())

    await asyncio.get_running_loop().create_task(run_main(), context=run_context("r42"))
    seen.append(RUN_ID.get())
    assert seen == ["r42", "r42", ""]


def test_a_planned_shutdown_drops_exactly_the_sdk_exit_code_lines() -> None:
    clock = StopClock(10.0)
    quiet = QuietPlannedExits(clock)
    lost_cli = _record("Fatal error in message reader: Command failed with exit code 143 (exit code: 143)\n"
                       "Error output: Check stderr output for details", name=QuietPlannedExits.LOGGER,
                       level=logging.ERROR)
    other = _record("Fatal error in message reader: Command failed with exit code 1 (exit code: 1)",
                    name=QuietPlannedExits.LOGGER, level=logging.ERROR)
    assert quiet.filter(lost_cli) and quiet.filter(other)  # not planned: everything is said
    clock.planned = True
    assert not quiet.filter(lost_cli) and quiet.filter(other)  # planned: only the signal's exits go
    for code in ("-15", "130", "137", "-9"):
        assert not quiet.filter(_record(f"Fatal error in message reader: exit code {code}",
                                        name=QuietPlannedExits.LOGGER, level=logging.ERROR))
    assert quiet.filter(_record("Prompt stream failed; closing stdin: exit code 143", level=logging.ERROR))


def test_the_stuck_step_is_named_even_when_reading_it_fails() -> None:
    clock = StopClock(10.0)
    assert clock.stuck() == "starting up"
    with clock.step("stopping front end slack"):
        assert clock.stuck() == "stopping front end slack"
        with clock.step(lambda: 1 / 0):  # type: ignore[arg-type,return-value]
            assert clock.stuck().startswith("(could not say")
    assert clock.stuck() == "starting up"


# ---- metrics from events and errors ----------------------------------------------------------------------
def test_rate_limits_are_told_apart_from_other_failures() -> None:
    assert is_rate_limit(TransientSurfaceError("slack chat.postMessage: rate limited", retry_after=1.0))
    assert is_rate_limit(TransientSurfaceError("discord post: HTTP 429 (code 0) You are being rate limited."))
    assert not is_rate_limit(TransientSurfaceError("slack chat.postMessage: internal_error"))
    assert not is_rate_limit(PermanentSurfaceError("slack chat.postMessage: channel_not_found"))


def test_events_and_the_main_threads_cost_are_counted() -> None:
    metrics = Metrics(cli_processes=lambda: 0)
    metrics.count_event(Event("text", "hi"))
    metrics.count_event(Event("result", "success", payload={"cost_usd": 0.25}))
    metrics.count_event(Event("result", "success", payload={"cost_usd": 0.5, "subagent": True}))  # inside the step's
    metrics.count_event(Event("result", "success", payload={"cost_usd": "lots"}))  # never raises
    metrics.count_event(Event("result", "success", payload=None))  # type: ignore[arg-type]
    text = metrics.render().decode()
    assert "flower_events_total 5.0" in text and "flower_cost_usd_total 0.25" in text
    assert "flower_intents_pending 0.0" in text and "flower_cli_processes 0.0" in text
    metrics.intents_pending = lambda: 1 // 0
    assert "flower_intents_pending NaN" in metrics.render().decode()  # a broken gauge does not break the page


def test_each_metrics_has_a_registry_of_its_own() -> None:
    a, b = Metrics(cli_processes=lambda: 0), Metrics(cli_processes=lambda: 0)
    a.count_event(Event("text", "x"))
    assert "flower_events_total 1.0" in a.render().decode() and "flower_events_total 0.0" in b.render().decode()


# ---- readiness over probes ----------------------------------------------------------------------------------
async def test_readiness_is_every_part_ready_and_a_bad_probe_never_hangs_or_raises() -> None:
    health = Health(timeout_s=0.2)
    assert await health.check() == (True, {})

    async def up() -> str:
        return "connected"

    async def hangs() -> str:
        await asyncio.Event().wait()
        return "never"

    async def breaks() -> str:
        raise RuntimeError("no")

    health.add("slack", up)
    assert await health.check() == (True, {"slack": "connected"})
    health.add("redis", hangs)
    health.add("discord", breaks)
    assert await health.check() == (False, {"slack": "connected", "redis": "timeout", "discord": "error"})
    health.parts = {"slack": up}
    health.stopping = True
    assert (await health.check())[0] is False


def test_cli_children_are_read_from_proc() -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        assert sleeper.pid in descendants(os.getpid())
        assert sleeper.pid not in cli_children()  # only programs named claude count as CLI processes
    finally:
        sleeper.kill()
        sleeper.wait()
    assert sleeper.pid not in descendants(os.getpid())
