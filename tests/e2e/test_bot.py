"""The `flower-bot` frame: configuration, errors as one line with exit 2, and a whole life in process
(serve → a run asks → shutdown → a new process reports it → the old card wakes it) on the demo model."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from adapters.hub import Hub
from adapters.hub.runs import KEPT
from adapters.memory_surface import MemorySurface
from adapters.platform import ThreadRef
from bots import bot as bot_module
from bots.bot import build_parser, serve
from bots.config import BotConfig, ConfigError, load_config
from bots.platforms import PLATFORMS
from tests.support.drive import drive
from tests.support.hub_support import BACK_NOTE, RESTART_SCENARIO, Watch, button, transcript_has

THREAD = ThreadRef("memory", "C1", "t1")


def config(argv: list[str], env: dict[str, str] | None = None, toml: str | None = None,
           tmp_path: Path | None = None) -> BotConfig:
    if toml is not None:
        assert tmp_path is not None
        path = tmp_path / "bot.toml"
        path.write_text(toml, encoding="utf-8")
        argv = [*argv, "--config", str(path)]
    return load_config(build_parser().parse_args(argv), env or {})


# ---- configuration ------------------------------------------------------------------------------
def test_flags_beat_environment_beat_file_beat_defaults(tmp_path: Path) -> None:
    toml = '[bot]\nroot = "from-file"\nmax_runs = 7\ntimeout_s = 60\n[surfaces]\nslack = true\n'
    cfg = config(["--max-runs", "2"], {"FLOWER_BOT_ROOT": str(tmp_path / "from-env")}, toml, tmp_path)
    assert cfg.root == (tmp_path / "from-env").resolve() and cfg.max_runs == 2 and cfg.timeout_s == 60.0
    assert cfg.surfaces == ["slack"]
    assert config([]).surfaces == ["web"]  # nothing named anywhere: the local page
    both = config(["web", "--discord"])
    assert both.surfaces == ["web", "discord"] and both.web_host == "127.0.0.1" and both.web_port == 8470
    assert both.max_asks is None and both.budget_usd is None and both.flow == "starter"


def test_the_language_comes_from_the_flag_the_environment_or_the_file(tmp_path: Path) -> None:
    from bots.bot import hub_settings

    assert config([]).language == "en"  # the bot speaks English to the model unless told otherwise
    assert config([], {}, '[bot]\nlanguage = "zh"\n', tmp_path).language == "zh"
    assert config([], {"FLOWER_LANG": "zh"}, '[bot]\nlanguage = "en"\n', tmp_path).language == "zh"
    cfg = config(["--lang", "en"], {"FLOWER_LANG": "zh"}, None, tmp_path)
    assert cfg.language == "en" and hub_settings(cfg).language == "en"


def test_channels_become_policies_and_workspaces(tmp_path: Path) -> None:
    toml = ('[channels."slack:C1"]\nworkspace = "proj"\nstarters = ["U1"]\nadmins = ["U9"]\n'
            '[channels."discord:42"]\nresponders = ["role:7"]\n')
    cfg = config([], {}, toml, tmp_path)
    slack, discord = cfg.channels
    assert slack.channel == "slack:C1" and slack.workspace is not None and slack.workspace.name == "proj"
    assert slack.starters == {"U1"} and slack.responders is None and slack.admins == {"U9"}
    assert discord.responders == {"role:7"} and discord.starters is None


def test_the_model_and_effort_come_from_the_file(tmp_path: Path) -> None:
    from bots.bot import hub_settings

    toml = ('[bot]\nmodel = "claude-opus-4-6"\neffort = "high"\nmodels = ["claude-opus-4-6", "claude-sonnet-4-6"]\n'
            '[channels."slack:C1"]\nmodels = ["claude-sonnet-4-6"]\n')
    s = hub_settings(config([], {}, toml, tmp_path))
    assert (s.model, s.effort, s.models) == ("claude-opus-4-6", "high", ("claude-opus-4-6", "claude-sonnet-4-6"))
    assert s.channel_models == {"slack:C1": ("claude-sonnet-4-6",)}
    assert s.model_problem("claude-sonnet-4-6", "slack:C1") is None
    assert "not allowed" in (s.model_problem("claude-opus-4-6", "slack:C1") or "")  # within both lists
    assert s.model_problem("claude-opus-4-6", "slack:C2") is None
    assert (hub_settings(config([])).model, hub_settings(config([])).models) == (None, ())


@pytest.mark.parametrize(("argv", "toml", "says"), [
    (["--port", "http"], None, "port must be a number"),
    (["telegram"], None, "unknown front end 'telegram'"),
    ([], "[bot]\nmax_run = 3\n", "unknown key [bot].max_run"),
    ([], "[bot]\nmax_runs = 'three'\n", "[bot].max_runs must be a number"),
    ([], '[channels."C1"]\nstarters = ["U1"]\n', '"platform:channel"'),
    ([], '[channels."slack:C1"]\nstarters = "U1"\n', "starters must be a list"),
    ([], "[surfaces]\nweb = 'yes'\n", "[surfaces].web must be true or false"),
    ([], "[bot\n", "not valid TOML"),
    (["--budget", "-1"], None, "budget_usd must be at least 0"),
    ([], '[bot]\nlanguage = "fr"\n', "language must be one of en, zh, got 'fr'"),
    ([], '[bot]\neffort = "extreme"\n', "[bot].effort: Unknown effort 'extreme'"),
    ([], '[bot]\nmodels = "opus"\n', "[bot].models must be a list of model names"),
    (["--lang", "klingon"], None, "language must be one of en, zh"),
])
def test_bad_configuration_names_the_problem(tmp_path: Path, argv: list[str], toml: str | None, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        config(argv, {}, toml, tmp_path)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_bad_configuration_exits_2_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    cmd = [sys.executable, "-m", "bots.bot", "--config", str(tmp_path / "missing.toml")]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no such file" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_cli_offers_exactly_the_registered_platforms() -> None:
    parser = build_parser()
    flags = {a.dest for a in parser._actions if a.dest.startswith("with_")}
    assert flags == {f"with_{name}" for name in PLATFORMS}
    assert list(PLATFORMS) == ["web", "slack", "discord"]
    with pytest.raises(ConfigError, match="choose from web, slack, discord"):
        config(["telegram"])


def test_the_web_page_runs_without_the_slack_and_discord_libraries(tmp_path: Path) -> None:
    """Each registry entry imports its platform only when chosen: with slack_bolt, slack_sdk and discord
    made unimportable, `web` is still built (and a Slack front end then fails on the import, as it should)."""
    script = (
        "import sys\n"
        "root = sys.argv[1]\n"
        "for lib in ('slack_bolt', 'slack_sdk', 'discord'):\n"
        "    sys.modules[lib] = None  # import fails, as when the library is not installed\n"
        "from bots.bot import build_frontends, build_parser\n"
        "from bots.config import load_config\n"
        "[front] = build_frontends(load_config(build_parser().parse_args(['web', '--root', root]), {}))\n"
        "print(front.name)\n"
        "tokens = {'SLACK_BOT_TOKEN': 'xoxb-1', 'SLACK_APP_TOKEN': 'xapp-1'}\n"
        "try:\n"
        "    build_frontends(load_config(build_parser().parse_args(['slack', '--root', root]), tokens))\n"
        "except ImportError:\n"
        "    print('slack needs its library')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["web", "slack needs its library"]


# ---- a whole life, in process ------------------------------------------------------------------------
class MemoryFrontend:
    """A front end as the bot sees one, over the recording in-memory surface (kept across processes,
    as a chat platform keeps its messages)."""

    name = "memory"

    def __init__(self, surface: MemorySurface) -> None:
        self.surface = surface
        self.hub: Hub | None = None
        self.events: list[str] = []

    def attach(self, hub: Hub) -> None:
        self.hub = hub
        hub.taps.append(lambda run_id, ev: self.events.append(ev.kind))

    async def start(self) -> None:
        self.events.append("started")

    async def stop(self) -> None:
        self.events.append("stopped")




async def test_serve_a_life_shutdown_and_restart_brings_the_run_back_on_its_old_card(tmp_path: Path,
                                                                          monkeypatch: Any) -> None:
    scenario = tmp_path / "life.toml"
    scenario.write_text(RESTART_SCENARIO, encoding="utf-8")
    surface = MemorySurface()
    watch = Watch(surface)
    frontends: list[MemoryFrontend] = []

    def build(cfg: BotConfig) -> list[MemoryFrontend]:
        frontends.append(MemoryFrontend(surface))
        return frontends[-1:]

    monkeypatch.setattr(bot_module, "build_frontends", build)
    argv = ["--root", str(tmp_path / "root"), "--flow", "single", "--demo", "--scenario", str(scenario),
            "--timeout", "120"]

    async def life() -> tuple[asyncio.Task[int], asyncio.Event, MemoryFrontend]:
        ready, stop = asyncio.Event(), asyncio.Event()
        task = asyncio.create_task(serve(config(argv), ready=ready, stop=stop))
        await asyncio.wait_for(ready.wait(), 60)
        return task, stop, frontends[-1]

    task, stop, first = await life()
    assert first.hub is not None
    run_id = (await drive(first.hub).start("pick indentation", THREAD, "ana")).run_id
    card = await watch.card("ask:1-q1")
    await transcript_has(first.hub.live[run_id], "work", "Tabs or spaces?")
    stop.set()  # SIGINT/SIGTERM do exactly this
    assert await asyncio.wait_for(task, 60) == 0
    assert first.events[0] == "started" and first.events[-1] == "stopped" and "ask" in first.events
    assert surface.find("ask:1-q1")[0].msg.buttons  # the question stays open across the restart

    task, stop, second = await life()
    assert second.hub is not None
    await watch.until(lambda s: any(BACK_NOTE in m.text for m in s.thread(kind="notice")))
    await watch.until(lambda s: KEPT in s.find("ask:1-q1")[-1].msg.text)  # restored on its old card
    answered = await drive(second.hub).handle_action(button(card, "spaces"), "ana", delivery_id="click-1")
    assert answered.ok and answered.message == "Answered: spaces", answered.message
    await watch.until(lambda s: any("Going with spaces." in m.text for m in s.thread(kind="prose")))
    assert not surface.find("ask:2-")  # the model did not have to ask again
    await watch.until(lambda s: bool(s.thread(kind="summary")))
    record = second.hub.store.get_run(run_id)
    assert record is not None and record.status == "done"
    stop.set()
    assert await asyncio.wait_for(task, 60) == 0

