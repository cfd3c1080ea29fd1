"""Event consumers: the chat-agnostic hub and its platforms (Slack, Discord, terminal, web).

Modules here import only flower_core's public API: never claude_agent_sdk, never `Event.raw`.
"""
