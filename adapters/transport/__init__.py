"""Transports: how the hub's chat side reaches the run side of its runs (see base.py).

`LocalTransport` runs them in this process (the embedded default); `RedisTransport` hands them to
`flower-worker` processes over Redis (redis_front.py, redis_worker.py).
"""

from adapters.transport.base import RunEnd, RunSide, RunSink, Transport
from adapters.transport.local import LocalTransport
from adapters.transport.plan import RunFactory, RunPlan, default_factory

__all__ = ["LocalTransport", "RunEnd", "RunFactory", "RunPlan", "RunSide", "RunSink", "Transport",
           "default_factory"]
