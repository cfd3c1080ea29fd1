"""Slack: the real slack-bolt/slack-sdk against the Slack double (tests/support/slack_double.py)."""
