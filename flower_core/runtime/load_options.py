"""The original flower's load-time options of ``Runtime``, checked once.

Here only ``portable`` changes anything (False: a spec without ``setting_sources`` of its own reads the
project's .claude settings). ``trim``, ``ephemeral``, ``keep_denials`` and ``spill_threshold`` belong to
the original's trimming/pruning session stores, which flower_core does not have yet: they are checked
and kept, so code written for the original constructs its runtime unchanged (docs/coming-from-flower.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LoadOptions:
    portable: bool = True
    trim: Any = False
    ephemeral: Any = True
    keep_denials: int = 1
    spill_threshold: int | None = 4000

    @classmethod
    def checked(cls, *, portable: bool, trim: Any, ephemeral: Any, keep_denials: int,
                spill_threshold: int | None) -> LoadOptions:
        if isinstance(keep_denials, bool) or not isinstance(keep_denials, int) or keep_denials < 0:
            raise ValueError(f"keep_denials must be a whole number >= 0, got {keep_denials!r}")
        if spill_threshold is not None and (isinstance(spill_threshold, bool) or not isinstance(spill_threshold, int)
                                            or spill_threshold <= 0):
            raise ValueError(f"spill_threshold must be a positive number of characters or None, "
                             f"got {spill_threshold!r}")
        return cls(bool(portable), trim, ephemeral, keep_denials, spill_threshold)
