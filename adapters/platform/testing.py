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

import asyncio
import inspect
import logging
from collections.abc import Collection
from dataclasses import dataclass, field

from adapters.platform.checks import CHECKS
from adapters.platform.probe import FAULTS, Fault, MakeRig, Notes, Probe, Rig, Seen, Skip

__all__ = ["CHECKS", "FAULTS", "ConformanceReport", "Fault", "MakeRig", "Probe", "Rig", "Seen",
           "SurfaceConformanceError", "run_surface_conformance"]

log = logging.getLogger(__name__)


@dataclass
class ConformanceReport:
    surface: str
    passed: list[str] = field(default_factory=list)
    fallbacks: dict[str, str] = field(default_factory=dict)  # optional member -> the fallback it reports
    skipped: dict[str, str] = field(default_factory=dict)  # check -> why the platform cannot play it
    failures: dict[str, str] = field(default_factory=dict)  # check -> what went wrong

    def __str__(self) -> str:
        lines = [f"surface {self.surface!r}: {len(self.passed)} passed, {len(self.failures)} failed, "
                 f"{len(self.skipped)} skipped"]
        lines += [f"  FAILED {name}: {why}" for name, why in self.failures.items()]
        lines += [f"  skipped {name}: {why}" for name, why in self.skipped.items()]
        lines += [f"  fallback {member}: {what}" for member, what in self.fallbacks.items()]
        return "\n".join(lines)


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
    """Run every check (or those named in `only`) on a fresh rig each; raise SurfaceConformanceError
    if any fails, else return the report."""
    unknown = set(only or ()) - set(CHECKS)
    if unknown:
        raise ValueError(f"unknown checks {sorted(unknown)}; known: {', '.join(CHECKS)}")
    report = ConformanceReport(surface="?")
    notes = Notes(report.fallbacks)
    for name, check in CHECKS.items():
        if only is not None and name not in only:
            continue
        rig = await _fresh(make_surface)
        report.surface = rig.surface.name
        try:
            await asyncio.wait_for(check(rig, notes), check_timeout)
        except Skip as why:
            report.skipped[name] = str(why)
        except TimeoutError:
            report.failures[name] = f"no answer within {check_timeout:g}s"
        except AssertionError as exc:
            report.failures[name] = str(exc) or type(exc).__name__
        except Exception as exc:  # a check's own call raised: that is the surface's failure too
            report.failures[name] = f"{type(exc).__name__}: {exc}"
        else:
            report.passed.append(name)
        finally:
            await _close(rig, close_timeout)
    if report.failures:
        raise SurfaceConformanceError(report)
    return report


async def _fresh(make_surface: MakeRig) -> Rig:
    made = make_surface()
    rig = await made if inspect.isawaitable(made) else made
    if not isinstance(rig, Rig):
        raise TypeError(f"make_surface must give a Rig(surface, probe), got {type(rig).__name__}")
    return rig


async def _close(rig: Rig, timeout: float) -> None:
    try:
        rig.probe.heal()
        if rig.close is not None:
            await asyncio.wait_for(rig.close(), timeout)
    except Exception as exc:  # a rig that cannot close must not hide the checks' results
        log.warning("conformance rig did not close cleanly: %r", exc)
