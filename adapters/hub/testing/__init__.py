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

import inspect
from collections.abc import Collection
from dataclasses import dataclass

from adapters.hub.testing.checks import DOOR_CHECKS, DoorCheck
from adapters.hub.testing.driver import DoorDriver, MakeDriver, OpenForm, Shown, Skip, Started, Told
from adapters.hub.testing.runs import OPTIONS, QUESTION, QuestionRun, QuestionRuns
from adapters.platform.suite import CheckReport, run_checks

__all__ = ["DOOR_CHECKS", "OPTIONS", "QUESTION", "DoorConformanceError", "DoorDriver", "DoorReport", "MakeDriver",
           "OpenForm", "QuestionRun", "QuestionRuns", "Shown", "Skip", "Started", "Told", "run_door_conformance"]

@dataclass
class DoorReport(CheckReport):
    """What the suite found on one platform's way to the door."""

    kind = "door on"


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
    """Run every check (or those named in `only`) on a fresh driver and run side each
    (adapters/platform/suite.py); raise DoorConformanceError if any fails, else return the report."""
    report = DoorReport()
    Subject = tuple[DoorDriver, QuestionRuns]  # a platform's driver over its own run side

    async def fresh() -> Subject:
        kit = QuestionRuns()
        made = make_driver(kit)
        return (await made if inspect.isawaitable(made) else made), kit

    async def play(check: DoorCheck, subject: Subject) -> None:
        await check(*subject)

    async def close(subject: Subject) -> None:
        await subject[0].close()

    await run_checks(DOOR_CHECKS, only=only, fresh=fresh, name_of=lambda subject: subject[0].platform, play=play,
                     close=close, report=report, check_timeout=check_timeout, close_timeout=close_timeout)
    if report.failures:
        raise DoorConformanceError(report)
    return report
