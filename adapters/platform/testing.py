"""`run_surface_conformance`: the platform contract as a suite a platform's own test runs.

```
make_surface() ─▶ Rig(surface, probe) ─▶ one check ─▶ rig.close()      (a fresh rig per check)
                        │        │
                        │        └─ the platform side, as a person sees it: read a message, count a
                        │           thread, what one user was told, delete a message, make the
                        │           platform fail (429, outage, refusal) and heal again
                        └─ the surface under test, driven only through the contract
```

A test hands a factory (sync or async) that returns a `Rig`; the suite calls it once per check,
runs every check with a deadline, and returns a `ConformanceReport` (what passed, which optional
members report their fallback, which checks the platform cannot play). When any check fails it
raises `SurfaceConformanceError` (an AssertionError) naming each failed check and why::

    async def test_my_surface() -> None:
        report = await run_surface_conformance(make_my_rig)
        assert not report.skipped

The checks themselves are in `adapters.platform.checks`, one function each, in `CHECKS` order.
A probe is test code of the platform's own: it reads the platform's double (or a sandbox of the
real platform), never the surface's internals, so a check sees what a person would.
"""

from __future__ import annotations

import inspect
from collections.abc import Collection
from dataclasses import dataclass, field

from adapters.platform.checks import CHECKS, Check
from adapters.platform.probe import FAULTS, Fault, MakeRig, Notes, Probe, Rig, Seen
from adapters.platform.suite import CheckReport, run_checks

__all__ = ["CHECKS", "FAULTS", "ConformanceReport", "Fault", "MakeRig", "Probe", "Rig", "Seen",
           "SurfaceConformanceError", "run_surface_conformance"]

@dataclass
class ConformanceReport(CheckReport):
    """What the suite found on one surface; `fallbacks`: optional members it left to their fallback."""

    fallbacks: dict[str, str] = field(default_factory=dict)  # optional member -> the fallback it reports
    kind = "surface"

    def more_lines(self) -> list[str]:
        return [f"  fallback {member}: {what}" for member, what in self.fallbacks.items()]


class SurfaceConformanceError(AssertionError):
    """The surface broke the contract; `report.failures` names each check and what went wrong."""

    def __init__(self, report: ConformanceReport) -> None:
        super().__init__(str(report))
        self.report = report

    @property
    def failures(self) -> dict[str, str]:
        return self.report.failures


async def run_surface_conformance(make_surface: MakeRig, *, check_timeout: float = 30.0,
                                  close_timeout: float = 10.0, only: Collection[str] | None = None,
                                  ) -> ConformanceReport:
    """Run every check (or those named in `only`) on a fresh rig each (adapters/platform/suite.py); raise
    SurfaceConformanceError if any fails, else return the report."""
    report = ConformanceReport()
    notes = Notes(report.fallbacks)

    async def play(check: Check, rig: Rig) -> None:
        await check(rig, notes)

    await run_checks(CHECKS, only=only, fresh=lambda: _fresh(make_surface), name_of=lambda rig: rig.surface.name,
                     play=play, close=_close, report=report, check_timeout=check_timeout,
                     close_timeout=close_timeout)
    if report.failures:
        raise SurfaceConformanceError(report)
    return report


async def _fresh(make_surface: MakeRig) -> Rig:
    made = make_surface()
    rig = await made if inspect.isawaitable(made) else made
    if not isinstance(rig, Rig):
        raise TypeError(f"make_surface must give a Rig(surface, probe), got {type(rig).__name__}")
    return rig


async def _close(rig: Rig) -> None:
    rig.probe.heal()
    if rig.close is not None:
        await rig.close()
