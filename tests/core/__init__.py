"""Tests of flower_core: events, the human channel, the runtime, workflows, stores, the model double."""
