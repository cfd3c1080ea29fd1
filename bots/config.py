"""The bot's configuration: command-line flags over environment over the TOML file over defaults.

One `BotConfig` serves every front end. Shared settings live in `[bot]`; each front end reads its
own table (`[web]`, `[slack]`, `[discord]`) through `section()`. Channel policies and workspaces:

    [bot]
    root = "./flower-runs"       # FLOWER_BOT_ROOT, --root
    flow = "starter"             # or "single"
    max_runs = 3
    timeout_s = 1800             # how long a question waits; 0 = unattended
    max_asks = 10                # omit for no quota
    budget_usd = 5.0             # omit for no cap
    dm_after_s = 60              # a question waiting this long goes to the run's owner as a DM; 0 = at once
    redis = "redis://h:6379/0"   # FLOWER_REDIS_URL, --redis: runs go to flower-worker processes (see README)
    health_port = 8471           # FLOWER_HEALTH_PORT, --health-port: /healthz /readyz /metrics on 127.0.0.1
    log_format = "text"          # FLOWER_LOG_FORMAT, --log-format: or "json" (one object a line, with run_id)
    stop_after_s = 10            # --stop-after: after SIGTERM/SIGINT the process is gone within this long
    wake_on_start = true         # --no-wake: runs the last process left live stay asleep until woken
    max_upload_mb = 20           # one file people attach to a run (saved in its workspace's inbox/)
    max_run_upload_mb = 200      # everything attached to one run
    language = "en"              # FLOWER_LANG: what the agent is told in ("zh": the original flower's Chinese)
    model = "claude-opus-4-6"    # a run's model when its starter chose none (omit: the CLI's default)
    effort = "high"              # low, medium, high, xhigh or max (omit: the CLI's default)
    models = ["claude-opus-4-6", "claude-sonnet-4-6"]  # the models people may choose (omit: any)
    timezone = "Europe/Berlin"   # routines' zone when neither they nor their creator's platform name one (UTC)
    stream = true                # FLOWER_STREAM=1: the agent's words stream into threads as written (off by default)

    [surfaces]                   # which front ends `flower-bot` runs when none is named
    web = true

    [channels."slack:C0123"]     # "platform:channel"
    workspace = "/srv/project"   # runs started here share this workspace
    starters = ["U01"]           # who may start runs (absent: everyone)
    responders = ["U02"]         # who may answer, send and interrupt (absent: everyone)
    admins = ["U03"]             # may do everything, including stopping others' runs
    max_budget_usd = 20          # a starter cannot ask for a bigger cost cap here (and gets this one by default)
    models = ["claude-sonnet-4-6"]  # the models people may choose here (also within [bot] models)

    [[routines]]                 # runs that start themselves (README: Routines), declared as code
    name = "Daily triage"        # also its id: "cfg-daily-triage"
    task = "Triage the new issues and post a summary"
    schedule = "every weekday at 9:00"   # or cron "0 9 * * 1-5", "every 2 hours", "at 2026-12-24 09:00"
    place = "slack:C0123"        # "platform:channel", or "web" (the web page)
    owner = "U01"                # whose run it is (its questions go to them); "web" for the web page
    timezone = "Europe/Berlin"   # default: [bot] timezone, else UTC
    overlap = "skip"             # or "queue": while its previous run is live
    catch_up = true              # fire once at start for what was missed while the bot was down
    timeout_s = 600              # run options: timeout_s, max_asks, budget_usd, approve = ["Bash"]

A problem is a `ConfigError` with one line that names the bad key or the missing variable.
"""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bots.platforms import PLATFORMS

__all__ = ["FLOWS", "LOG_FORMATS", "SURFACES", "BotConfig", "ChannelConfig", "ConfigError", "RoutineConfig",
           "health_port", "language", "load_config", "log_format", "redis_url", "refuse_unknown", "stop_after"]

SURFACES = tuple(PLATFORMS)  # the front ends that can run, in the registry's order (bots/platforms.py)
FLOWS = ("starter", "single")
LOG_FORMATS = ("text", "json")
_BOT_KEYS = {"root", "flow", "max_runs", "timeout_s", "max_asks", "budget_usd", "park_after_s", "warm_pool",
             "max_parked", "dm_after_s", "redis", "health_port", "log_format", "stop_after_s", "wake_on_start",
             "max_upload_mb", "max_run_upload_mb", "ask_tools", "allow_tools", "deny_tools", "approval_timeout_s",
             "unattended_approvals", "language", "model", "effort", "models", "timezone", "stream"}
_ROUTINE_KEYS = {"name", "task", "schedule", "place", "owner", "timezone", "overlap", "catch_up", "timeout_s",
                 "max_asks", "budget_usd", "approve"}
_CHANNEL_KEYS = {"workspace", "starters", "responders", "admins", "max_budget_usd", "max_upload_mb",
                 "max_run_upload_mb", "ask_tools", "allow_tools", "deny_tools", "models"}


class ConfigError(Exception):
    """Bad or missing configuration: printed as one line, exit code 2."""


@dataclass(frozen=True)
class ChannelConfig:
    channel: str  # "platform:channel"
    workspace: Path | None = None
    starters: frozenset[str] | None = None
    responders: frozenset[str] | None = None
    admins: frozenset[str] = frozenset()
    max_budget_usd: float | None = None  # the budget ceiling of runs started here
    max_upload_mb: float | None = None  # None: the [bot] value
    max_run_upload_mb: float | None = None
    approvals: dict[str, Any] = field(default_factory=dict)  # ask/allow/deny_tools, adding to the bot's
    models: tuple[str, ...] = ()  # the models people may choose here (empty: the bot's list)


@dataclass(frozen=True)
class RoutineConfig:
    """One `[[routines]]` table: checked here for its shape; its schedule is read when the bot starts
    (adapters/hub/routines.py `declare`), where a bad one is a ConfigError too."""

    name: str
    task: str
    schedule: str
    place: str  # "platform:channel" or "web"
    owner: str
    timezone: str = ""
    overlap: str = "skip"
    catch_up: bool = True
    options: dict[str, Any] = field(default_factory=dict)  # timeout_s, max_asks, budget_usd, approve


@dataclass
class BotConfig:
    surfaces: list[str]
    root: Path = Path("flower-runs")
    flow: str = "starter"
    max_runs: int = 3
    timeout_s: float | None = 1800.0
    max_asks: int | None = None
    budget_usd: float | None = None
    park_after_s: float | None = 0.0
    warm_pool: int = 1
    max_parked: int = 10_000
    dm_after_s: float | None = 60.0
    redis_url: str | None = None  # set: this process is the chat front only; workers hold the runs
    demo: bool = False
    demo_scenario: str = "demo"
    verbose: bool = False
    health_port: int | None = None  # a loopback port for /healthz /readyz /metrics (0 = any free one)
    log_format: str = "text"
    stop_after_s: float = 10.0
    wake_on_start: bool = True
    max_upload_mb: float = 20.0
    max_run_upload_mb: float = 200.0
    language: str = "en"  # flower_core.lang: what the model reads from the bridge and the framework
    model: str | None = None  # a run's model and effort by default (None: the CLI's)
    effort: str | None = None
    models: tuple[str, ...] = ()  # the models people may choose (empty: any)
    timezone: str = ""  # routines' default zone ("": UTC)
    routines: list[RoutineConfig] = field(default_factory=list)
    stream: bool = False  # the model's words as they are written (Runtime(partial_text=True)) to every thread
    web_host: str = "127.0.0.1"
    web_port: int = 8470
    config_path: Path | None = None
    channels: list[ChannelConfig] = field(default_factory=list)
    approvals: dict[str, Any] = field(default_factory=dict)  # [bot]'s ask/allow/deny_tools and their settings
    env: dict[str, str] = field(default_factory=dict)
    tables: dict[str, Any] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        """The TOML table `[name]` (empty when absent)."""
        table = self.tables.get(name)
        return dict(table) if isinstance(table, dict) else {}


def load_config(args: argparse.Namespace, env: Mapping[str, str]) -> BotConfig:
    tables = _read_toml(args.config or env.get("FLOWER_BOT_CONFIG"))
    bot = tables.get("bot", {})
    if not isinstance(bot, dict):
        raise ConfigError("config: [bot] must be a table")
    refuse_unknown(bot, _BOT_KEYS, "[bot]")

    surfaces = _surfaces(args, tables)
    root = args.root or env.get("FLOWER_BOT_ROOT") or _typed(bot, "root", str, "./flower-runs")
    flow = args.flow or _typed(bot, "flow", str, "starter")
    if flow not in FLOWS:
        raise ConfigError(f"config: flow must be one of {', '.join(FLOWS)}, got {flow!r}")
    cfg = BotConfig(
        surfaces=surfaces,
        root=Path(root).expanduser().resolve(),
        flow=flow,
        max_runs=_pick(args.max_runs, bot, "max_runs", int, 3, low=1),
        timeout_s=_pick(args.timeout, bot, "timeout_s", float, 1800.0),
        max_asks=_optional(args.asks, bot, "max_asks", int, low=0),
        budget_usd=_optional(args.budget, bot, "budget_usd", float, low=0.0),
        park_after_s=_optional(None, bot, "park_after_s", float, low=0.0, default=0.0),
        warm_pool=_pick(_env_int(env, "FLOWER_WARM_POOL"), bot, "warm_pool", int, 1, low=0),
        max_parked=_pick(None, bot, "max_parked", int, 10_000, low=0),
        dm_after_s=_pick(None, bot, "dm_after_s", float, 60.0, low=0.0),
        redis_url=redis_url(getattr(args, "redis", None) or env.get("FLOWER_REDIS_URL")
                            or _typed(bot, "redis", str, None)),
        demo=bool(args.demo),
        demo_scenario=getattr(args, "scenario", None) or "demo",
        verbose=bool(args.verbose),
        health_port=health_port(_flag(args, "health_port"), env, _typed(bot, "health_port", int, None)),
        log_format=log_format(_flag(args, "log_format"), env, _typed(bot, "log_format", str, None)),
        stop_after_s=stop_after(_pick(_flag(args, "stop_after"), bot, "stop_after_s", float, 10.0)),
        wake_on_start=not _flag(args, "no_wake") and _typed(bot, "wake_on_start", bool, True),
        max_upload_mb=_pick(None, bot, "max_upload_mb", float, 20.0, low=0.0),
        max_run_upload_mb=_pick(None, bot, "max_run_upload_mb", float, 200.0, low=0.0),
        language=language(_flag(args, "lang"), env, _typed(bot, "language", str, None)),
        model=_typed(bot, "model", str, None) or None,
        effort=_effort(_typed(bot, "effort", str, None)),
        models=_models(bot, "[bot]"),
        stream=env.get("FLOWER_STREAM", "") in ("1", "true", "yes") or _typed(bot, "stream", bool, False),
        web_host=args.host or env.get("FLOWER_WEB_HOST") or "127.0.0.1",
        web_port=_port(args.port if args.port is not None else env.get("FLOWER_WEB_PORT", 8470)),
        config_path=Path(args.config).resolve() if args.config else None,
        channels=_channels(tables.get("channels", {})),
        timezone=_timezone(_typed(bot, "timezone", str, "")),
        routines=_routines(tables.get("routines", [])),
        approvals=_approvals(bot, "[bot]"),
        env=dict(env),
        tables=tables,
    )
    return cfg


def refuse_unknown(table: Mapping[str, Any], known: set[str], where: str, hint: str = "") -> None:
    """A ConfigError naming the first key of `table` that is not `known` (a typo is not ignored)."""
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"config: unknown key {where}.{unknown[0]} (known: {', '.join(sorted(known))}{hint})")


def redis_url(value: str | None) -> str | None:
    """A Redis URL as redis-py takes it, or None; anything else is a ConfigError."""
    if not value:
        return None
    if not value.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"redis: expected redis://host:port/db (or rediss://, unix://), got {value.split('@')[-1]!r}")
    return value


def health_port(flag: int | None, env: Mapping[str, str], table_value: int | None = None) -> int | None:
    """--health-port, else FLOWER_HEALTH_PORT, else the file's value; None = no health port."""
    value: Any = flag if flag is not None else env.get("FLOWER_HEALTH_PORT") or table_value
    return None if value is None or value == "" else _port(value, "health port")


def log_format(flag: str | None, env: Mapping[str, str], table_value: str | None = None) -> str:
    """--log-format, else FLOWER_LOG_FORMAT, else the file's value, else text."""
    value = flag or env.get("FLOWER_LOG_FORMAT") or table_value or "text"
    if value not in LOG_FORMATS:
        raise ConfigError(f"log format must be one of {', '.join(LOG_FORMATS)}, got {value!r}")
    return value


def language(flag: str | None, env: Mapping[str, str], table_value: str | None = None) -> str:
    """--lang, else FLOWER_LANG, else [bot] language, else English; one of flower_core.lang's catalogues."""
    from flower_core.lang import available

    value = (flag or env.get("FLOWER_LANG") or table_value or "en").strip().lower()
    if value not in available():
        raise ConfigError(f"config: language must be one of {', '.join(available())}, got {value!r}")
    return value


def stop_after(value: float) -> float:
    if not value > 0 or value == float("inf"):
        raise ConfigError(f"stop_after_s must be a number of seconds above 0, got {value}")
    return float(value)


# ---- pieces --------------------------------------------------------------------------------------
def _flag(args: argparse.Namespace, name: str) -> Any:
    return getattr(args, name, None)


def _read_toml(path: str | None) -> dict[str, Any]:
    if not path:
        return {}
    p = Path(path).expanduser()
    try:
        with p.open("rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config: no such file {p}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config: {p} is not valid TOML: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"config: cannot read {p}: {exc.strerror}") from None


def _surfaces(args: argparse.Namespace, tables: dict[str, Any]) -> list[str]:
    named = list(dict.fromkeys([*args.surfaces, *(s for s in SURFACES if getattr(args, f"with_{s}", False))]))
    for s in named:
        if s not in SURFACES:
            raise ConfigError(f"unknown front end {s!r}; choose from {', '.join(SURFACES)}")
    if named:
        return named
    table = tables.get("surfaces", {})
    if not isinstance(table, dict):
        raise ConfigError("config: [surfaces] must be a table of name = true/false")
    for key, on in table.items():
        if key not in SURFACES:
            raise ConfigError(f"config: unknown key [surfaces].{key} (known: {', '.join(SURFACES)})")
        if not isinstance(on, bool):
            raise ConfigError(f"config: [surfaces].{key} must be true or false")
    chosen = [s for s in SURFACES if table.get(s)]
    return chosen or ["web"]  # nothing named anywhere: the local web page, the embedded default


def _typed(table: dict[str, Any], key: str, kind: type, default: Any) -> Any:
    if key not in table:
        return default
    value = table[key]
    ok = isinstance(value, kind) or (kind is float and isinstance(value, int) and not isinstance(value, bool))
    if not ok or (kind in (int, float) and isinstance(value, bool)):
        what = {int: "a number", float: "a number", bool: "true or false"}.get(kind, "a string")
        raise ConfigError(f"config: [bot].{key} must be {what}, got {value!r}")
    return kind(value)


def _pick(flag: Any, table: dict[str, Any], key: str, kind: type, default: Any, *, low: float | None = None) -> Any:
    value = flag if flag is not None else _typed(table, key, kind, default)
    if low is not None and value < low:
        raise ConfigError(f"{key} must be at least {low:g}, got {value}")
    return value


def _env_int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name)
    if raw is None or not raw.strip():
        return None
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number, got {raw!r}") from None


def _optional(flag: Any, table: dict[str, Any], key: str, kind: type, *, low: float,
              default: Any = None) -> Any:
    """A setting where "unset" means "none" (no quota, no cap)."""
    value = flag if flag is not None else _typed(table, key, kind, default)
    if value is not None and value < low:
        raise ConfigError(f"{key} must be at least {low:g}, got {value}")
    return value


def _port(value: Any, what: str = "port") -> int:
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{what} must be a number, got {value!r}") from None
    if not 0 <= port <= 65535:
        raise ConfigError(f"{what} must be between 0 and 65535, got {port}")
    return port


def _channels(table: Any) -> list[ChannelConfig]:
    if not isinstance(table, dict):
        raise ConfigError('config: [channels] must hold tables like [channels."slack:C0123"]')
    out = []
    for name, entry in table.items():
        where = f'[channels."{name}"]'
        if name.count(":") != 1 or not all(name.split(":")):
            raise ConfigError(f'config: {where}: a channel is "platform:channel", e.g. "slack:C0123"')
        if not isinstance(entry, dict):
            raise ConfigError(f"config: {where} must be a table")
        refuse_unknown(entry, _CHANNEL_KEYS, where)
        lists: dict[str, frozenset[str] | None] = {}
        for key in ("starters", "responders", "admins"):
            value = entry.get(key)
            if value is not None and (not isinstance(value, list) or not all(isinstance(v, str) for v in value)):
                raise ConfigError(f"config: {where}.{key} must be a list of user ids (strings)")
            lists[key] = None if value is None else frozenset(value)
        workspace = entry.get("workspace")
        if workspace is not None and not isinstance(workspace, str):
            raise ConfigError(f"config: {where}.workspace must be a path (string)")
        ceiling = entry.get("max_budget_usd")
        if ceiling is not None and (isinstance(ceiling, bool) or not isinstance(ceiling, int | float) or ceiling < 0):
            raise ConfigError(f"config: {where}.max_budget_usd must be a number of dollars, 0 or more")
        uploads = {}
        for key in ("max_upload_mb", "max_run_upload_mb"):
            value = entry.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < 0):
                raise ConfigError(f"config: {where}.{key} must be a number of megabytes, 0 or more")
            uploads[key] = None if value is None else float(value)
        out.append(ChannelConfig(name, Path(workspace).expanduser().resolve() if workspace else None,
                                 lists["starters"], lists["responders"], lists["admins"] or frozenset(),
                                 None if ceiling is None else float(ceiling),
                                 approvals=_approvals(entry, where), models=_models(entry, where), **uploads))
    return out


def _models(table: dict[str, Any], where: str) -> tuple[str, ...]:
    value = table.get("models")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"config: {where}.models must be a list of model names (strings)")
    return tuple(value)


def _effort(value: str | None) -> str | None:
    from flower_core.runtime import effort_problem

    if value and (bad := effort_problem(value)) is not None:
        raise ConfigError(f"config: [bot].effort: {bad}")
    return value or None


def _timezone(name: str) -> str:
    from adapters.hub import ScheduleError
    from adapters.hub.schedule import zone

    if name:
        try:
            zone(name)
        except ScheduleError as exc:
            raise ConfigError(f"config: [bot] timezone: {exc}") from None
    return name


def _routines(table: Any) -> list[RoutineConfig]:
    if not isinstance(table, list) or not all(isinstance(e, dict) for e in table):
        raise ConfigError("config: routines must be [[routines]] tables (an array of tables)")
    out, names = [], set()
    for n, entry in enumerate(table, 1):
        where = f"[[routines]] #{n}"
        refuse_unknown(entry, _ROUTINE_KEYS, where)
        texts = {}
        for key in ("name", "task", "schedule", "place", "owner", "timezone", "overlap"):
            value = entry.get(key, "")
            if not isinstance(value, str):
                raise ConfigError(f"config: {where}.{key} must be a string")
            texts[key] = value.strip()
        for key in ("task", "schedule", "place"):
            if not texts[key]:
                raise ConfigError(f"config: {where}.{key} is required")
        place = texts["place"]
        if place != "web" and (place.count(":") != 1 or not all(place.split(":"))):
            raise ConfigError(f'config: {where}.place is "platform:channel" (e.g. "slack:C0123") or "web"')
        owner = texts["owner"] or ("web" if place == "web" else "")
        if not owner:
            raise ConfigError(f"config: {where}.owner is required (the user whose run it is) for {place}")
        if texts["overlap"] not in ("", "skip", "queue"):
            raise ConfigError(f'config: {where}.overlap must be "skip" or "queue"')
        catch_up = entry.get("catch_up", True)
        if not isinstance(catch_up, bool):
            raise ConfigError(f"config: {where}.catch_up must be true or false")
        name = texts["name"] or texts["task"][:40]
        if name.lower() in names:
            raise ConfigError(f"config: {where}: a second routine named {name!r}")
        names.add(name.lower())
        options = {k: entry[k] for k in ("timeout_s", "max_asks", "budget_usd", "approve") if k in entry}
        for key in ("timeout_s", "max_asks", "budget_usd"):
            value = options.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value < 0):
                raise ConfigError(f"config: {where}.{key} must be a number, 0 or more")
        approve = options.get("approve")
        if approve is not None and (not isinstance(approve, list) or not all(isinstance(a, str) for a in approve)):
            raise ConfigError(f'config: {where}.approve must be a list of tools, e.g. ["Bash"]')
        out.append(RoutineConfig(name, texts["task"], texts["schedule"], place, owner, _timezone(texts["timezone"]),
                                 texts["overlap"] or "skip", catch_up, options))
    return out


def _approvals(table: dict[str, Any], where: str) -> dict[str, Any]:
    """The tool-approval keys of a table, checked (Claude Code's rule syntax; see flower_core/permissions.py)."""
    from flower_core.human.approval import SETTING_KEYS, gate_from

    found = {k: table[k] for k in SETTING_KEYS if k in table}
    try:
        gate_from({"ask_tools": ["Bash"], **found})  # builds the policy: a bad rule or setting raises here
    except ValueError as exc:
        raise ConfigError(f"config: {where}: {exc}") from None
    return found
