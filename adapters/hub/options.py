"""RunOptions: the per-run choices a starter may make, kept beside the run so a woken run keeps them."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from adapters.view import fmt as _fmt
from flower_core.permissions import parse_rules
from flower_core.runtime import effort_problem

__all__ = ["OPTIONS_FILE", "RunOptions"]


@dataclass(frozen=True)
class RunOptions:
    """Per-run choices a starter may make (a command option, a form field); None = the bot's default.

    Kept in `<run_dir>/run-options.json` so a woken run keeps them.
    """

    timeout_s: float | None = None
    max_asks: int | None = None
    budget_usd: float | None = None
    approve: tuple[str, ...] | None = None  # tools to ask about before they run, beside the channel's
    model: str | None = None  # the run's model and effort (a person may change them while it runs)
    effort: str | None = None
    plan: bool | None = None  # plan first: the work starts once a person approved the agent's plan

    def to_json(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None})

    @classmethod
    def load(cls, run_dir: Path) -> RunOptions:
        try:
            return cls.of_json((run_dir / OPTIONS_FILE).read_text(encoding="utf-8"))
        except OSError:
            return cls()

    @classmethod
    def of_json(cls, text: str) -> RunOptions:
        """Options as `to_json` wrote them (unreadable: the defaults)."""
        try:
            data = json.loads(text)
        except ValueError:
            return cls()
        known = {f for f in cls.__dataclass_fields__}
        if not isinstance(data, dict):
            return cls()
        kept = {k: v for k, v in data.items() if k in known}
        if isinstance(kept.get("approve"), list):
            kept["approve"] = tuple(kept["approve"])
        return cls(**kept)

    def problem(self) -> str | None:
        """What is wrong with these choices, said to the person who made them (None: nothing)."""
        if self.max_asks is not None and self.max_asks < 0:
            return "The question quota must be 0 or more."
        if self.budget_usd is not None and self.budget_usd < 0:
            return "The budget must be 0 or more dollars."
        if (bad := effort_problem(self.effort)) is not None:
            return bad
        if self.approve is not None:
            try:
                parse_rules(list(self.approve), key="approve")
            except ValueError as exc:
                return f"Bad approval list: {exc}"
        return None

    def within(self, ceiling: float | None, *, default: float | None) -> tuple[RunOptions, str | None]:
        """A channel's budget ceiling: the cap when none was asked for (nor set as the bot's `default`),
        a refusal above it."""
        if ceiling is None:
            return self, None
        asked = self.budget_usd if self.budget_usd is not None else default
        if asked is None:
            return replace(self, budget_usd=ceiling), None
        if asked > ceiling:
            return self, (f"This channel caps a run's budget at {_fmt.money(ceiling)}; ask for "
                          f"{_fmt.money(ceiling)} or less.")
        return replace(self, budget_usd=asked), None

    @staticmethod
    def approve_from(text: str) -> tuple[str, ...]:
        """A chat option's tool list: "bash,edits" -> ("Bash", "Edit"); short names are spelled out
        (APPROVE_ALIASES), anything else is taken as a rule as written (``problem`` checks it)."""
        out: list[str] = []
        for word in (w.strip() for w in text.split(",")):
            if word:
                out += APPROVE_ALIASES.get(word.lower(), (word,))
        return tuple(dict.fromkeys(out))

    def steered(self, model: str | None, effort: str | None) -> RunOptions:
        """These choices with a new model and/or effort (None keeps that part)."""
        return replace(self, model=model or self.model, effort=effort or self.effort)

    def save(self, run_dir: Path) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / OPTIONS_FILE).write_text(self.to_json(), encoding="utf-8")


OPTIONS_FILE = "run-options.json"
# Short names a person types for `approve=`: "edits" are every file-editing tool (an Edit rule covers them).
APPROVE_ALIASES: dict[str, tuple[str, ...]] = {
    "bash": ("Bash",), "shell": ("Bash",), "edits": ("Edit",), "edit": ("Edit",), "write": ("Write",),
    "web": ("WebFetch", "WebSearch"), "all": ("Bash", "Edit", "WebFetch", "WebSearch"),
}
