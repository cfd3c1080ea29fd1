"""How a conformance suite runs, shared by the surface suite (adapters/platform/testing.py) and the door's
(adapters/hub/testing): each check on a fresh subject, under a deadline, into one report.

```
run_checks(checks, only=, fresh=, play=, close=, report=)
  for each named check (or those in `only`; an unknown name is a ValueError):
      subject = await fresh()             a rig, a driver… made anew for every check
      await play(check, subject)          within check_timeout
          Skip("why")   → report.skipped[name]
          AssertionError, TimeoutError, any other error → report.failures[name]
          else          → report.passed
      await close(subject)                within close_timeout; a failure to close is logged, never hides results
```
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

__all__ = ["CheckReport", "Skip", "run_checks"]

log = logging.getLogger(__name__)

Check = TypeVar("Check")
Subject = TypeVar("Subject")


class Skip(Exception):
    """Raised by a check the platform cannot play (a 429 on a page without rate limits, a second person
    on a page only one person uses), with why."""


@dataclass
class CheckReport:
    """What a suite found on one subject. `subject`: the surface's or platform's name."""

    subject: str = "?"
    passed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # check -> why the platform cannot play it
    failures: dict[str, str] = field(default_factory=dict)  # check -> what went wrong
    kind = "suite"  # how the report's first line names what was checked ("surface", "door on")

    def __str__(self) -> str:
        lines = [f"{self.kind} {self.subject!r}: {len(self.passed)} passed, {len(self.failures)} failed, "
                 f"{len(self.skipped)} skipped"]
        lines += [f"  FAILED {name}: {why}" for name, why in self.failures.items()]
        lines += [f"  skipped {name}: {why}" for name, why in self.skipped.items()]
        return "\n".join(lines + self.more_lines())

    def more_lines(self) -> list[str]:
        return []


async def run_checks(checks: Mapping[str, Check], *, only: Collection[str] | None,
                     fresh: Callable[[], Awaitable[Subject]], name_of: Callable[[Subject], str],
                     play: Callable[[Check, Subject], Awaitable[object]],
                     close: Callable[[Subject], Awaitable[object]], report: CheckReport,
                     check_timeout: float, close_timeout: float) -> None:
    unknown = set(only or ()) - set(checks)
    if unknown:
        raise ValueError(f"unknown checks {sorted(unknown)}; known: {', '.join(checks)}")
    for name, check in checks.items():
        if only is not None and name not in only:
            continue
        subject = await fresh()
        report.subject = name_of(subject)
        try:
            await asyncio.wait_for(play(check, subject), check_timeout)
        except Skip as why:
            report.skipped[name] = str(why)
        except TimeoutError:
            report.failures[name] = f"no answer within {check_timeout:g}s"
        except AssertionError as exc:
            report.failures[name] = str(exc) or type(exc).__name__
        except Exception as exc:  # the check's own call raised: the platform's failure too
            report.failures[name] = f"{type(exc).__name__}: {exc}"
        else:
            report.passed.append(name)
        finally:
            try:
                await asyncio.wait_for(close(subject), close_timeout)
            except Exception as exc:  # a subject that cannot close must not hide the checks' results
                log.warning("conformance: %s did not close cleanly: %r", report.subject, exc)
