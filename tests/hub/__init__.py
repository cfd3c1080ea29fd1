"""Tests of the chat-agnostic hub and what it is made of: access, view, outbox, ids, state, restarts."""
