"""HubSettings: how a hub runs its runs — limits, question windows, budgets, parking, restarts, looks.

One frozen value a bot builds from its configuration (bots/config.py) and hands to `Hub`; the hub's
collaborators each read the part that is theirs. Defaults are the bot's documented defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adapters.view import ViewConfig

MB = 1024 * 1024


@dataclass(frozen=True)
class UploadLimits:
    """How much people may attach to a run (adapters/hub/files.py): one file, and the run's whole inbox."""

    max_file_bytes: int = 20 * MB
    max_run_bytes: int = 200 * MB

    @classmethod
    def of_mb(cls, per_file: float | None, per_run: float | None) -> UploadLimits:
        """From the configuration's megabytes; None keeps the default."""
        base = cls()
        return cls(base.max_file_bytes if per_file is None else int(per_file * MB),
                   base.max_run_bytes if per_run is None else int(per_run * MB))


@dataclass(frozen=True)
class HubSettings:
    root: Path = Path("flower-runs")  # workspaces, sessions and run records live under it
    # "platform:channel" -> a workspace the channel's runs share (default: one per run under root)
    workspaces: Mapping[str, Path] = field(default_factory=dict)
    max_runs: int = 3  # runs with a CLI at once (parked ones apart); workers apply their own
    max_parked: int = 10_000  # parked runs at once (beyond it, a waiting run keeps its CLI); ~0.05 MB each
    timeout_s: float | None = 1800.0  # how long a question waits (0: unattended)
    max_asks: int | None = None  # question quota per run
    budget_usd: float | None = None  # default cost cap per run
    # "platform:channel" -> the most a run started there may spend (a starter cannot ask for more)
    budget_ceilings: Mapping[str, float] = field(default_factory=dict)
    dm_after_s: float | None = 60.0  # a question waiting longer reaches its owner by direct message
    # Tool approvals (flower_core.human.approval.SETTING_KEYS): the bot's, and "platform:channel" -> the
    # channel's, which add to the bot's; a run's own `approve` list adds tools to ask about.
    approvals: Mapping[str, Any] = field(default_factory=dict)
    channel_approvals: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    park_after_s: float | None = 0.0  # a question waiting longer closes the run's CLI (None: never)
    # The newest waiting questions whose runs keep their CLI (answered at live speed); at most max_runs.
    warm_pool: int = 1
    wake_on_start: bool = True  # runs the last process left live come back by themselves
    oracle: bool = True  # runs answer side questions (`?…`)
    language: str = "en"  # what the model is spoken to in (flower_core.lang: "en", "zh" the seed's texts)
    model: str | None = None  # a run's model and effort when its starter chose none (None: the CLI's default)
    effort: str | None = None
    # The models people may choose (empty: any): the bot's, and "platform:channel" -> the channel's; a
    # model must be in both lists that are set.
    models: tuple[str, ...] = ()
    channel_models: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    view: ViewConfig = field(default_factory=ViewConfig)
    uploads: UploadLimits = field(default_factory=UploadLimits)  # files people attach (the [bot] keys)
    # "platform:channel" -> its own upload limits (a [channels."…"] table's keys)
    channel_uploads: Mapping[str, UploadLimits] = field(default_factory=dict)
    timezone: str = ""  # routines' zone when neither they nor their creator's platform name one ("": UTC)

    def __post_init__(self) -> None:
        # Resolved once, so every path the hub makes from them compares equal.
        object.__setattr__(self, "root", Path(self.root).expanduser().resolve())
        object.__setattr__(self, "workspaces",
                           {k: Path(v).expanduser().resolve() for k, v in self.workspaces.items()})
        object.__setattr__(self, "budget_ceilings", dict(self.budget_ceilings))
        object.__setattr__(self, "channel_uploads", dict(self.channel_uploads))
        object.__setattr__(self, "models", tuple(self.models))
        object.__setattr__(self, "channel_models", {k: tuple(v) for k, v in self.channel_models.items()})

    def model_problem(self, model: str | None, channel: str) -> str | None:
        """Why `model` may not be chosen for a run in `channel` ("platform:channel"), or None."""
        if not model:
            return None
        for allowed in (self.models, self.channel_models.get(channel, ())):
            if allowed and model not in allowed:
                return f"Model {model!r} is not allowed here; choose one of: {', '.join(allowed)}."
        return None
