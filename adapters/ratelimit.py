"""Token buckets on an injectable clock: the pacing half of the outbox.

A `RateBudget` holds one bucket for posts and one for edits (platforms limit them separately:
Slack chat.postMessage ~1/s per channel vs chat.update Tier 3). Share one budget between the
outboxes of threads in the same channel when the platform limits per channel.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from adapters.platform import PlatformLimits

__all__ = ["RateBudget", "TokenBucket"]

_EPSILON = 1e-6


class TokenBucket:
    """`rate` tokens per second, at most `burst` saved up. Not thread-safe: use from one loop."""

    def __init__(self, rate: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError(f"need rate > 0 and burst >= 1, got rate={rate} burst={burst}")
        self.rate, self.burst, self._clock = rate, float(burst), clock
        self._tokens = float(burst)
        self._last = clock()
        self._blocked_until = float("-inf")

    def _refill(self) -> float:
        now = self._clock()
        if now > self._last:
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
            self._last = now
        return now

    def wait_time(self) -> float:
        """Seconds until a token is available (0 = now)."""
        now = self._refill()
        wait = max((1.0 - self._tokens) / self.rate, self._blocked_until - now)
        # Float dust (0.9999999 tokens) must not become a sleep too short to move the clock.
        return wait if wait > _EPSILON else 0.0

    def take(self) -> None:
        self._refill()
        self._tokens -= 1.0

    def block_for(self, seconds: float) -> None:
        """The platform said "retry after": spend nothing until then and start from empty."""
        now = self._refill()
        self._blocked_until = max(self._blocked_until, now + seconds)
        self._tokens = min(self._tokens, 0.0)


class RateBudget:
    """Separate budgets for posting new messages and editing existing ones."""

    def __init__(self, limits: PlatformLimits, clock: Callable[[], float] = time.monotonic) -> None:
        self.posts = TokenBucket(limits.post_per_s, limits.post_burst, clock)
        self.updates = TokenBucket(limits.update_per_min / 60.0, limits.update_burst, clock)
        starts, grows = limits.stream_starts_per_min, limits.stream_grows_per_min
        self.starts = TokenBucket(starts / 60.0, limits.post_burst, clock) if starts > 0 else self.posts
        self.grows = TokenBucket(grows / 60.0, limits.update_burst, clock) if grows > 0 else self.updates

    def bucket(self, op: str) -> TokenBucket:
        """"update" (edits), "start" / "grow" (a stream starting / growing or closing), else "post"."""
        if op == "start":
            return self.starts
        if op == "grow":
            return self.grows
        return self.updates if op == "update" else self.posts
