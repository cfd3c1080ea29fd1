"""What the campaign knows of its scenario: which turns ask, which read the inbox, which is the last word.

Read from the scenario file itself (tests/support/scenarios/restart_campaign.toml), so editing the file cannot
leave the harness counting against a script that is no longer played.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flower_core.devmodel import Scenario, load_scenario

SCENARIO_PATH = Path(__file__).resolve().parent.parent / "scenarios" / "restart_campaign.toml"
ASK, INBOX = "mcp__human__ask", "mcp__human__inbox"


@dataclass(frozen=True)
class Script:
    scenario: Scenario
    ask_turns: frozenset[int]
    inbox_turns: frozenset[int]
    end_turn: int  # the first turn without tool calls: the model's last word
    stretch: int  # from this turn on only the final inbox reads are left: no more mail or interrupts

    @classmethod
    def load(cls, path: Path = SCENARIO_PATH) -> Script:
        scenario = load_scenario(path)
        if len(scenario.conversations) != 1:
            raise ValueError(f"{path}: the campaign plays one conversation for every run")
        turns = scenario.conversations[0].turns
        asks = frozenset(i for i, t in enumerate(turns) if any(c.tool == ASK for c in t.calls))
        inbox = frozenset(i for i, t in enumerate(turns) if any(c.tool == INBOX for c in t.calls))
        end = next((i for i, t in enumerate(turns) if not t.calls), len(turns))
        if not asks or not inbox or max(inbox) < max(asks):
            raise ValueError(f"{path}: the run must ask, and read its inbox after its last question")
        stretch = min(i for i in inbox if i > max(asks))
        return cls(scenario, asks, inbox, end, stretch)

    def is_end(self, turn: int, served: str) -> bool:
        """Was this request answered with the model's last word (no tool call)?"""
        return served == "fallback" or (served == "turn" and turn >= self.end_turn)

    def served_ask(self, turn: int, served: str) -> bool:
        return served == "turn" and turn in self.ask_turns

    def served_inbox(self, turn: int, served: str) -> bool:
        return served == "turn" and turn in self.inbox_turns
