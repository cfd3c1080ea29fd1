"""`flower-bot --redis` and `flower-worker` configuration: where the Redis URL comes from, and bad
input as one line with exit code 2 (no traceback, nothing started)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bots.bot import build_parser
from bots.config import ConfigError, load_config

ROOT = Path(__file__).resolve().parents[2]


def test_the_redis_url_comes_from_the_flag_then_the_environment_then_the_file(tmp_path: Path) -> None:
    toml = tmp_path / "bot.toml"
    toml.write_text('[bot]\nredis = "redis://from-file:6379/0"\n', encoding="utf-8")
    base = ["--config", str(toml)]
    env = {"FLOWER_REDIS_URL": "redis://from-env:6379/1"}
    assert load_config(build_parser().parse_args([*base, "--redis", "redis://flag:1/2"]), env).redis_url == \
        "redis://flag:1/2"
    assert load_config(build_parser().parse_args(base), env).redis_url == "redis://from-env:6379/1"
    assert load_config(build_parser().parse_args(base), {}).redis_url == "redis://from-file:6379/0"
    assert load_config(build_parser().parse_args([]), {}).redis_url is None  # the embedded default


def test_a_url_that_is_not_redis_is_refused_without_echoing_credentials() -> None:
    with pytest.raises(ConfigError) as err:
        load_config(build_parser().parse_args(["--redis", "http://user:secret@host:6379"]), {})
    assert "redis://" in str(err.value) and "secret" not in str(err.value)


@pytest.mark.parametrize(("argv", "says"), [
    ([], "--redis (or FLOWER_REDIS_URL) is required"),
    (["--redis", "localhost:6379"], "expected redis://"),
    (["--redis", "redis://127.0.0.1:1/0", "--max-runs", "0"], "--max-runs must be ≥ 1"),
    (["--redis", "redis://127.0.0.1:1/0", "--dead-after", "0.5"], "--dead-after longer than the heartbeat"),
])
def test_flower_worker_refuses_bad_configuration_in_one_line(argv: list[str], says: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "bots.worker", *argv], capture_output=True, text=True,
                          timeout=60, cwd=ROOT, env=env)
    assert done.returncode == 2, done.stderr
    assert says in done.stderr and done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr


@pytest.mark.parametrize("module", ["bots.worker", "bots.bot"])
def test_an_unreachable_redis_stops_the_process_at_once_in_one_line(module: str, tmp_path: Path) -> None:
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"redis://user:secret@127.0.0.1:{port}/0"
    extra = ["web", "--port", "0"] if module == "bots.bot" else ["--demo"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", module, *extra, "--redis", url, "--root", str(tmp_path / "r")],
                          capture_output=True, text=True, timeout=90, cwd=ROOT, env=env)
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert "cannot reach Redis at redis://127.0.0.1" in last and "secret" not in done.stderr
    assert "Traceback" not in done.stderr


def test_a_front_over_redis_does_not_claim_the_offline_demo_for_its_workers() -> None:
    from bots.web_bot import build

    local = build(load_config(build_parser().parse_args(["web"]), {}))
    front = build(load_config(build_parser().parse_args(["web", "--redis", "redis://127.0.0.1:1/0"]), {}))
    assert local.demo and not front.demo  # no credentials here: only the one-process bot runs the demo model
