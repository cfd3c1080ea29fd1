"""The warm pool: which waiting runs keep their CLI while every other one parks at once.

An answer reaches the model about as fast as a live one only through a CLI that is already up *and* holds
the session with the question's call still open: a spare CLI cannot take a stored session later
(`--await-claim` refuses `--resume`, and `claim_session` binds a fresh session only), and a CLI started on
the session before the answer exists closes the open call itself when it loads the transcript (docs/parking.md,
facts 10-12). So the only warm process that can take an answer is the asking run's own. The pool keeps the
``size`` most recently asked questions' CLIs up (the ones most likely to be answered next); a newer question
pushes the oldest one out, and that run parks at once. ``size`` 0: every waiting run parks after ``after_s``.

One pool is shared by every Runtime of a process (the bot's EngineKit holds it). Loop-thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable


class WarmPool:
    """Up to ``size`` holders, newest questions first; ``hold`` enters one, pushing the oldest out."""

    def __init__(self, size: int = 1) -> None:
        if size < 0:
            raise ValueError(f"warm pool size must be >= 0, not {size!r}")
        self.size = size
        self._held: dict[Hashable, tuple[float, Callable[[], None]]] = {}
        self._out: set[Hashable] = set()  # pushed out: they park, and do not come back in for this question

    def hold(self, key: Hashable, asked_at: float, pushed_out: Callable[[], None]) -> bool:
        """True: the question ``key`` (asked at ``asked_at``) keeps its CLI. When the pool is full, the oldest
        holder is pushed out (``pushed_out`` of it is called: it should park) unless ``key`` is older still."""
        if key in self._held:
            return True
        if key in self._out or self.size <= 0:
            return False
        if len(self._held) >= self.size:
            oldest = min(self._held, key=lambda k: self._held[k][0])
            if self._held[oldest][0] > asked_at:
                return False
            _, tell = self._held.pop(oldest)
            self._out.add(oldest)
            tell()
        self._held[key] = (asked_at, pushed_out)
        return True

    def release(self, key: Hashable) -> None:
        """The question no longer waits with its CLI (answered, parked, the attempt ended)."""
        self._held.pop(key, None)
        self._out.discard(key)

    def held(self) -> int:
        return len(self._held)
