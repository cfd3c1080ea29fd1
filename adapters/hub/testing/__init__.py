"""`run_door_conformance`: the hub's door, checked as a person meets it on one platform.

```
make_driver(kit) ─▶ DoorDriver ─▶ one check ─▶ driver.close()      (a fresh driver, hub and kit per check)
        │               │
        │               └─ a person on the platform: start, press a card's button (again, with the same
        │                  delivery; a foreign id), a form, a message in the thread, stop — through the
        │                  platform's real inbound path — and what the person was then shown, alone
        └─ QuestionRuns: the hub's run side (the real engine, one scripted question, no model), where a
           check reads what reached the run
```

A platform's test hands a factory (sync or async) that wires its bot to a hub built with `kit=kit`;
the suite calls it once per check, runs every check with a deadline, and returns a `DoorReport` (what
passed, which checks the platform cannot play and why). When any check fails it raises
`DoorConformanceError` (an AssertionError) naming each failed check and what the person saw::

    async def test_my_platform_keeps_the_door() -> None:
        report = await run_door_conformance(lambda kit: MyDriver(kit))
        assert not report.skipped

The checks are in `adapters.hub.testing.checks`, one function each, in `DOOR_CHECKS` order; the driver
protocol is `adapters.hub.testing.driver`. This package imports no platform and no test double: a new
platform's tests bring their own driver. (It lives in the hub, not in adapters/platform, which stays a
leaf that knows nothing of the hub.)
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Collection
from dataclasses import dataclass, field

from adapters.hub.testing.checks import DOOR_CHECKS
from adapters.hub.testing.driver import DoorDriver, MakeDriver, OpenForm, Shown, Skip, Started, Told
from adapters.hub.testing.runs import OPTIONS, QUESTION, QuestionRun, QuestionRuns

__all__ = ["DOOR_CHECKS", "OPTIONS", "QUESTION", "DoorConformanceError", "DoorDriver", "DoorReport", "MakeDriver",
           "OpenForm", "QuestionRun", "QuestionRuns", "Shown", "Skip", "Started", "Told", "run_door_conformance"]

log = logging.getLogger(__name__)


@dataclass
class DoorReport:
    platform: str
    passed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # check -> why the platform cannot play it
    failures: dict[str, str] = field(default_factory=dict)  # check -> what went wrong

    def __str__(self) -> str:
        lines = [f"door on {self.platform!r}: {len(self.passed)} passed, {len(self.failures)} failed, "
                 f"{len(self.skipped)} skipped"]
        lines += [f"  FAILED {name}: {why}" for name, why in self.failures.items()]
        lines += [f"  skipped {name}: {why}" for name, why in self.skipped.items()]
        return "\n".join(lines)


class DoorConformanceError(AssertionError):
    """The platform's way to the door broke the contract; `report.failures` names each check and why."""

    def __init__(self, report: DoorReport) -> None:
        super().__init__(str(report))
        self.report = report

    @property
    def failures(self) -> dict[str, str]:
        return self.report.failures


async def run_door_conformance(make_driver: MakeDriver, *, check_timeout: float = 30.0,
                               close_timeout: float = 10.0, only: Collection[str] | None = None) -> DoorReport:
    """Run every check (or those named in `only`) on a fresh driver each; raise DoorConformanceError if
    any fails, else return the report."""
    unknown = set(only or ()) - set(DOOR_CHECKS)
    if unknown:
        raise ValueError(f"unknown checks {sorted(unknown)}; known: {', '.join(DOOR_CHECKS)}")
    report = DoorReport(platform="?")
    for name, check in DOOR_CHECKS.items():
        if only is not None and name not in only:
            continue
        kit = QuestionRuns()
        driver = await _fresh(make_driver, kit)
        report.platform = driver.platform
        try:
            await asyncio.wait_for(check(driver, kit), check_timeout)
        except Skip as why:
            report.skipped[name] = str(why)
        except TimeoutError:
            report.failures[name] = f"no answer within {check_timeout:g}s"
        except AssertionError as exc:
            report.failures[name] = str(exc) or type(exc).__name__
        except Exception as exc:  # a driver's own call raised: the platform's path broke
            report.failures[name] = f"{type(exc).__name__}: {exc}"
        else:
            report.passed.append(name)
        finally:
            await _close(driver, close_timeout)
    if report.failures:
        raise DoorConformanceError(report)
    return report


async def _fresh(make_driver: MakeDriver, kit: QuestionRuns) -> DoorDriver:
    made = make_driver(kit)
    driver = await made if inspect.isawaitable(made) else made
    return driver


async def _close(driver: DoorDriver, timeout: float) -> None:
    try:
        await asyncio.wait_for(driver.close(), timeout)
    except Exception as exc:  # a driver that cannot close must not hide the checks' results
        log.warning("door conformance driver did not close cleanly: %r", exc)
