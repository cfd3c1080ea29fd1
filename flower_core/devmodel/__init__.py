"""Offline model double: the Anthropic Messages API played from a scenario file."""

from .scenario import (
           Call,
           Conversation,
           Fault,
           Scenario,
           ScenarioError,
           Turn,
           load_scenario,
           parse_scenario,
           shipped_scenarios,
)
from .server import ModelDouble, RecordedRequest, cli_env

__all__ = ["Call", "Conversation", "Fault", "ModelDouble", "RecordedRequest", "Scenario",
           "ScenarioError", "Turn", "cli_env", "load_scenario", "parse_scenario", "shipped_scenarios"]
