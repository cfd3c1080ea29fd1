"""The platform kit: everything a chat platform shares with the hub, and the test it must pass.

```
adapters/platform/
  messages.py   ThreadRef, OutMessage, Button: the neutral message model
  errors.py     SurfaceError (Transient / Permanent), StartRefused
  limits.py     PlatformLimits and every platform's numbers (SLACK, DISCORD, WEB, MEMORY, ID_MAX)
  contract.py   Surface (required members), PlatformSurface (+ optional members and their fallbacks)
  testing.py    run_surface_conformance(make_surface): the contract as a suite (not imported here)
```

A new platform writes a `PlatformSurface` subclass, its limits, and a test that runs
`run_surface_conformance` against the platform's real library and a double of its API.
"""

from adapters.platform.contract import OPTIONAL_MEMBERS, PlatformSurface, Surface, as_platform, provides
from adapters.platform.errors import (
    PermanentSurfaceError,
    StartRefused,
    StreamRefused,
    SurfaceError,
    TransientSurfaceError,
)
from adapters.platform.limits import (
    DISCORD,
    ID_MAX,
    MEMORY,
    SLACK,
    WEB,
    DiscordLimits,
    PlatformLimits,
    SlackLimits,
    WebLimits,
)
from adapters.platform.messages import (
    BUTTON_STYLES,
    KINDS,
    LIVE_STATES,
    RECEIPT_STATES,
    TASK_STATES,
    TONES,
    Button,
    FileRef,
    LiveText,
    OutMessage,
    Task,
    ThreadRef,
)

__all__ = [
    "BUTTON_STYLES",
    "DISCORD",
    "ID_MAX",
    "KINDS",
    "LIVE_STATES",
    "MEMORY",
    "OPTIONAL_MEMBERS",
    "RECEIPT_STATES",
    "SLACK",
    "TASK_STATES",
    "TONES",
    "WEB",
    "Button",
    "DiscordLimits",
    "FileRef",
    "LiveText",
    "OutMessage",
    "PermanentSurfaceError",
    "PlatformLimits",
    "PlatformSurface",
    "SlackLimits",
    "StartRefused",
    "StreamRefused",
    "Surface",
    "SurfaceError",
    "Task",
    "ThreadRef",
    "TransientSurfaceError",
    "WebLimits",
    "as_platform",
    "provides",
]
