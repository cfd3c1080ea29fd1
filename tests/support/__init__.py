"""Helpers and doubles the tests share: the Slack, Discord, engine and Redis doubles, fixtures, campaigns, scenarios."""
