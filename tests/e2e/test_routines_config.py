"""`[[routines]]` and `[bot] timezone` in the bot's TOML file: read, checked (one line naming the key), and
declared into a hub as code (stable ids, updated in place, gone when gone from the file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.hub import Hub, HubSettings
from adapters.memory_surface import MemorySurface
from adapters.state import MemoryStateStore
from bots.bot import declare_routines, routine_hold
from bots.config import ConfigError
from tests.e2e.test_bot import config

TRIAGE = '''
[bot]
timezone = "Europe/Berlin"

[[routines]]
name = "Daily triage"
task = "Triage the new issues and post a summary"
schedule = "every weekday at 9:00"
place = "slack:C0123"
owner = "U01"
overlap = "queue"
catch_up = false
timeout_s = 600
approve = ["Bash"]

[[routines]]
task = "Check the nightly build"
schedule = "0 6 * * *"
place = "web"
timezone = "America/New_York"
'''


def test_routines_are_read_from_the_file(tmp_path: Path) -> None:
    cfg = config([], {}, TRIAGE, tmp_path)
    assert cfg.timezone == "Europe/Berlin"
    daily, nightly = cfg.routines
    assert (daily.name, daily.place, daily.owner, daily.overlap, daily.catch_up) == (
        "Daily triage", "slack:C0123", "U01", "queue", False)
    assert daily.options == {"timeout_s": 600, "approve": ["Bash"]}
    assert (nightly.name, nightly.owner, nightly.timezone, nightly.overlap) == (
        "Check the nightly build", "web", "America/New_York", "skip")


def test_declared_routines_land_in_the_hub_under_stable_ids(tmp_path: Path) -> None:
    cfg = config([], {}, TRIAGE, tmp_path)
    store = MemoryStateStore()
    hub = Hub(MemorySurface(), store, HubSettings(root=tmp_path / "runs", timezone=cfg.timezone))
    declare_routines(hub, cfg)
    declare_routines(hub, cfg)  # a second start changes nothing
    by_id = {i.routine.routine_id: i for i in hub.query.routines()}
    assert sorted(by_id) == ["cfg-check-the-nightly-build", "cfg-daily-triage"]
    daily = by_id["cfg-daily-triage"].routine
    assert (daily.timezone, daily.schedule, daily.owner, daily.source) == ("Europe/Berlin", "0 9 * * 1-5", "U01",
                                                                           "config")
    assert '"timeout_s": 600' in daily.options and '"approve": ["Bash"]' in daily.options
    assert by_id["cfg-check-the-nightly-build"].routine.place.platform == "web"


@pytest.mark.parametrize(("toml", "says"), [
    ('[bot]\ntimezone = "Mars/Olympus"\n', "[bot] timezone: unknown time zone 'Mars/Olympus'"),
    ('[routines]\ntask = "t"\n', "[[routines]] tables"),
    ('[[routines]]\ntask = "t"\nschedule = "every day at 9:00"\n', "[[routines]] #1.place is required"),
    ('[[routines]]\ntask = "t"\nschedule = "every day at 9:00"\nplace = "C1"\nowner = "U1"\n', '"platform:channel"'),
    ('[[routines]]\ntask = "t"\nschedule = "every day at 9:00"\nplace = "slack:C1"\n', "owner is required"),
    ('[[routines]]\ntask = "t"\nschedule = "s"\nplace = "web"\nwhen = 1\n', "unknown key [[routines]] #1.when"),
    ('[[routines]]\ntask = "t"\nschedule = "s"\nplace = "web"\noverlap = "pile"\n', "overlap must be"),
    ('[[routines]]\ntask = "t"\nschedule = "s"\nplace = "web"\ncatch_up = "no"\n', "catch_up must be true or false"),
    ('[[routines]]\ntask = "t"\nschedule = "s"\nplace = "web"\ntimeout_s = -1\n', "timeout_s must be a number"),
])
def test_bad_routines_are_one_line_naming_the_key(tmp_path: Path, toml: str, says: str) -> None:
    with pytest.raises(ConfigError) as err:
        config([], {}, toml, tmp_path)
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_schedule_nobody_can_fire_on_is_a_config_error_at_start(tmp_path: Path) -> None:
    good = '[[routines]]\nname = "ok"\ntask = "t"\nschedule = "every hour"\nplace = "web"\n'
    cfg = config([], {}, good + '[[routines]]\nname = "x"\ntask = "t"\nschedule = "every 10 seconds"\nplace = "web"\n',
                 tmp_path)
    hub = Hub(MemorySurface(), MemoryStateStore(), HubSettings(root=tmp_path / "runs"))
    with pytest.raises(ConfigError, match=r"\[\[routines\]\] routine 'x': an interval under a minute"):
        declare_routines(hub, cfg)
    assert hub.query.routines() == []  # not even the good one: all are checked before any is saved


def test_the_hold_seam_reads_moments() -> None:
    assert routine_hold("") == {}
    assert routine_hold("opened=30, started=1.5") == {"opened": 30.0, "started": 1.5}
    with pytest.raises(ConfigError):
        routine_hold("opened")
