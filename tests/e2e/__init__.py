"""Whole processes: flower and flower-bot in real processes, restart campaigns, shipped scenarios, operations."""
