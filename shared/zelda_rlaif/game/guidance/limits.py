"""Request rate limiting for one env: a token bucket on a monotonic clock (see config.py for the global share)."""

from __future__ import annotations

import time
from collections.abc import Callable


class TokenBucket:
    """At most ``burst`` requests back to back, then ``rate_per_s`` on average; never blocks, only refuses."""

    def __init__(self, rate_per_s: float, burst: int, clock: Callable[[], float] = time.monotonic) -> None:
        if rate_per_s <= 0 or burst < 1:
            raise ValueError(f"a token bucket needs rate_per_s > 0 and burst >= 1 (got {rate_per_s}, {burst})")
        self.rate_per_s = rate_per_s
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()

    def try_take(self) -> bool:
        now = self._clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.rate_per_s)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False
