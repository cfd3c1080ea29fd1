"""The original flower's load-time options of ``Runtime``, checked once, and what each one does.

- ``trim`` / ``ephemeral`` / ``keep_denials``: the policies of the runtime's own session store, a
  ``PruningSessionStore`` (pruning.py): trimming is off by default, expiry of stale glances and
  pruning (old denials, synthetic API errors, interrupt leftovers) are on. A ``TrimPolicy`` /
  ``EphemeralPolicy`` is used as given; a bool becomes the default policy with ``enabled`` set to it.
  A store passed as ``session_store=`` (e.g. the Redis one) is used as it is: these do not apply.
- ``portable=False``: a spec without ``setting_sources`` of its own reads the project's .claude settings.
- ``spill_threshold``: with a ``Workbench``, a tool result of that many characters or more is spilled to
  the workbench (``spill_guard``) unless the spec already carries a spill guard; None or 0: no guard.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flower_core.guards import is_spill_guard, spill_guard
from flower_core.pruning import PrunePolicy, PruningSessionStore
from flower_core.trimming import EphemeralPolicy, TrimPolicy
from flower_core.workbench import Workbench

if TYPE_CHECKING:
    from flower_core.spec import AgentSpec


@dataclass(frozen=True)
class LoadOptions:
    portable: bool = True
    trim: TrimPolicy | bool = False
    ephemeral: EphemeralPolicy | bool = True
    keep_denials: int = 1
    spill_threshold: int | None = 4000

    @classmethod
    def checked(cls, *, portable: bool, trim: Any, ephemeral: Any, keep_denials: int,
                spill_threshold: int | None) -> LoadOptions:
        if isinstance(keep_denials, bool) or not isinstance(keep_denials, int) or keep_denials < 0:
            raise ValueError(f"keep_denials must be a whole number >= 0, got {keep_denials!r}")
        if spill_threshold is not None and (isinstance(spill_threshold, bool) or not isinstance(spill_threshold, int)
                                            or spill_threshold < 0):
            raise ValueError(f"spill_threshold must be a number of characters >= 0 or None, got {spill_threshold!r}")
        return cls(bool(portable), trim, ephemeral, keep_denials, spill_threshold)

    def trim_policy(self) -> TrimPolicy:
        return self.trim if isinstance(self.trim, TrimPolicy) else TrimPolicy(enabled=bool(self.trim))

    def ephemeral_policy(self) -> EphemeralPolicy:
        return (self.ephemeral if isinstance(self.ephemeral, EphemeralPolicy)
                else EphemeralPolicy(enabled=bool(self.ephemeral)))

    def store(self, path: Path, workspace: Path) -> PruningSessionStore:
        return PruningSessionStore(path, workspace, policy=self.trim_policy(), ephemeral=self.ephemeral_policy(),
                                   prune=PrunePolicy(keep_denials=self.keep_denials))

    def shaped(self, spec: AgentSpec, workbench: Any) -> AgentSpec:
        """The spec as this runtime runs it: project settings when not portable, the spill guard."""
        if not self.portable and not spec.setting_sources:
            spec = replace(spec, setting_sources=["project"])
        if isinstance(workbench, Workbench) and self.spill_threshold:
            post = list((spec.hooks or {}).get("PostToolUse", []))
            if not any(is_spill_guard(m) for m in post):
                guard = spill_guard(workbench, threshold=self.spill_threshold)
                spec = replace(spec, hooks={**(spec.hooks or {}), "PostToolUse": [*post, guard]})
        return spec
