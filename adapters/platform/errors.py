"""The errors a platform may raise to the hub: what a surface call's failure means, and why a front
end could not come up.

A surface translates every failure of its library into one of two kinds, so the outbox needs no
platform knowledge to decide: `TransientSurfaceError` (try again later, after `retry_after` when the
platform said how long) or `PermanentSurfaceError` (the same call will never work). Anything else
escaping a surface is a bug in it (`run_surface_conformance` checks that none does).
"""

from __future__ import annotations

__all__ = ["PermanentSurfaceError", "StartRefused", "StreamRefused", "SurfaceError", "TransientSurfaceError"]


class SurfaceError(Exception):
    """Base class of the errors a Surface may raise."""


class TransientSurfaceError(SurfaceError):
    """Try again later (rate limited, 5xx, network); `retry_after` in seconds when the platform said."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class PermanentSurfaceError(SurfaceError):
    """Retrying the same call will not help (bad request, missing permission, message deleted)."""


class StreamRefused(PermanentSurfaceError):
    """This platform will not stream a message here (an older workspace, an app not set up for it, a
    surface without `stream`): the outbox shows the thread's words as ordinary messages from then on."""


class StartRefused(Exception):
    """A front end cannot come up for a reason a person must fix (a refused token, a switched-off
    intent, a taken port); the message says what to do, in one line, with no secret in it."""
