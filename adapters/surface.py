"""The platform-neutral message model and the interface every chat platform implements.

Their home is `adapters.platform` (messages, errors, limits, contract); this module keeps the
names where the hub, the platforms and the tests have always imported them from.
"""

from __future__ import annotations

from adapters.platform.contract import PlatformSurface, Surface, as_platform
from adapters.platform.errors import PermanentSurfaceError, StartRefused, SurfaceError, TransientSurfaceError
from adapters.platform.limits import DISCORD, MEMORY, SLACK, PlatformLimits
from adapters.platform.messages import BUTTON_STYLES, KINDS, RECEIPT_STATES, TONES, Button, OutMessage, ThreadRef

__all__ = [
    "BUTTON_STYLES",
    "DISCORD",
    "KINDS",
    "MEMORY",
    "RECEIPT_STATES",
    "SLACK",
    "TONES",
    "Button",
    "OutMessage",
    "PermanentSurfaceError",
    "PlatformLimits",
    "PlatformSurface",
    "StartRefused",
    "Surface",
    "SurfaceError",
    "ThreadRef",
    "TransientSurfaceError",
    "as_platform",
]
