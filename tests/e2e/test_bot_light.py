"""Issue 37 on the bot side: the parking knobs it reads, and a bot at rest that has not loaded the SDK."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from adapters.hub import Hub, HubSettings
from adapters.memory_surface import MemorySurface
from adapters.state import SQLiteStateStore
from bots.bot import build_parser, hub_settings
from bots.config import BotConfig, ConfigError, load_config


def config(argv: list[str], env: dict[str, str] | None = None, toml: str | None = None,
           tmp_path: Path | None = None) -> BotConfig:
    if toml is not None:
        assert tmp_path is not None
        (tmp_path / "bot.toml").write_text(toml, encoding="utf-8")
        argv = [*argv, "--config", str(tmp_path / "bot.toml")]
    return load_config(build_parser().parse_args(argv), env or {})


def test_a_question_parks_at_once_and_one_warm_cli_is_kept_unless_told_otherwise(tmp_path: Path) -> None:
    cfg = config([])
    assert cfg.park_after_s == 0.0 and cfg.warm_pool == 1
    assert hub_settings(cfg).park_after_s == 0.0 and hub_settings(cfg).warm_pool == 1
    from_file = config([], {}, "[bot]\npark_after_s = 20\nwarm_pool = 2\n", tmp_path)
    assert from_file.park_after_s == 20.0 and hub_settings(from_file).warm_pool == 2
    assert config([], {"FLOWER_WARM_POOL": "0"}, "[bot]\nwarm_pool = 2\n", tmp_path).warm_pool == 0
    with pytest.raises(ConfigError, match="FLOWER_WARM_POOL must be a whole number"):
        config([], {"FLOWER_WARM_POOL": "many"})
    with pytest.raises(ConfigError, match="warm_pool must be at least 0"):
        config([], {}, "[bot]\nwarm_pool = -1\n", tmp_path)


def test_the_warm_pool_is_never_larger_than_max_runs(tmp_path: Path) -> None:
    store = SQLiteStateStore(tmp_path / "state.db")
    try:
        hub = Hub(MemorySurface(), store, HubSettings(root=tmp_path / "runs", max_runs=2, warm_pool=5))
        warm = hub.transport.kit.warm  # type: ignore[attr-defined]
        assert warm is not None and warm.size == 2
    finally:
        store.close()


def test_a_bot_at_rest_has_not_loaded_the_sdk(tmp_path: Path) -> None:
    """The web bot serving its page, no run yet: claude_agent_sdk (and the mcp packages it pulls in, ~60 MB)
    is not imported; the first run imports it."""
    script = (
        "import asyncio, sys\n"
        "from bots.bot import build_parser, serve\n"
        "from bots.config import load_config\n"
        "async def main():\n"
        "    args = ['web', '--demo', '--root', sys.argv[1], '--port', '0', '--no-wake']\n"
        "    cfg = load_config(build_parser().parse_args(args), {})\n"
        "    ready, stop = asyncio.Event(), asyncio.Event()\n"
        "    task = asyncio.create_task(serve(cfg, ready=ready, stop=stop))\n"
        "    await asyncio.wait_for(ready.wait(), 60)\n"
        "    print('loaded:', 'claude_agent_sdk' in sys.modules, 'mcp' in sys.modules)\n"
        "    stop.set()\n"
        "    await asyncio.wait_for(task, 60)\n"
        "asyncio.run(main())\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "root")], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("loaded:")] == ["loaded: False False"]
