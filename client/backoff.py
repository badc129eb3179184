"""Reconnect delays: a few quick jittered retries, then truncated exponential backoff.

Pure: every delay is computed from the attempt number and a ``random.Random`` the caller owns,
so a seeded generator gives reproducible delays.

For attempt ``n`` (0 = the first retry after a failure):

- ``n < quick_retries``: ``base * uniform(1 - jitter, 1 + jitter)`` (about ``base`` seconds);
- otherwise, with ``k = n - quick_retries``: ``uniform(0, min(cap, base * multiplier ** (k + 1)))``
  ("full jitter"). Every delay is in ``[0, cap]``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

_MAX_EXPONENT = 64  # base * multiplier ** 64 is far above any sensible cap


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """Parameters of the reconnect policy. Defaults: 3 retries ~5 s apart, then up to 120 s.

    ``stable_after`` is how long (seconds) a connection must have stayed up for the next failure
    to start over at attempt 0; a server that accepts and then drops every connection at once
    therefore still gets exponential backoff.
    """

    base: float = 5.0
    quick_retries: int = 3
    jitter: float = 0.3
    multiplier: float = 2.0
    cap: float = 120.0
    stable_after: float = 10.0

    def __post_init__(self) -> None:
        if self.base < 0:
            raise ValueError(f"backoff base must be >= 0, got {self.base}")
        if self.quick_retries < 0:
            raise ValueError(f"backoff quick_retries must be >= 0, got {self.quick_retries}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"backoff jitter must be within 0-1, got {self.jitter}")
        if self.multiplier < 1:
            raise ValueError(f"backoff multiplier must be >= 1, got {self.multiplier}")
        if self.cap < 0:
            raise ValueError(f"backoff cap must be >= 0, got {self.cap}")
        if self.stable_after < 0:
            raise ValueError(f"backoff stable_after must be >= 0, got {self.stable_after}")

    def upper_bound(self, attempt: int) -> float:
        """The largest delay attempt ``attempt`` can draw."""
        if attempt < 0:
            raise ValueError(f"attempt must be >= 0, got {attempt}")
        if attempt < self.quick_retries:
            return min(self.cap, self.base * (1 + self.jitter))
        exponent = min(attempt - self.quick_retries + 1, _MAX_EXPONENT)
        return min(self.cap, self.base * self.multiplier**exponent)

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based), drawn from ``rng``."""
        if attempt < 0:
            raise ValueError(f"attempt must be >= 0, got {attempt}")
        if attempt < self.quick_retries:
            quick = self.base * rng.uniform(1 - self.jitter, 1 + self.jitter)
            return min(self.cap, quick)
        return rng.uniform(0, self.upper_bound(attempt))


@dataclass(slots=True)
class Backoff:
    """Attempt counter over a :class:`BackoffPolicy`: ``next_delay()``; ``reset()`` on success."""

    policy: BackoffPolicy = field(default_factory=BackoffPolicy)
    rng: random.Random = field(default_factory=random.Random)
    attempt: int = 0

    def next_delay(self) -> float:
        """The delay before the next retry; advances the attempt counter."""
        value = self.policy.delay(self.attempt, self.rng)
        self.attempt += 1
        return value

    def reset(self) -> None:
        """Start over with quick retries."""
        self.attempt = 0
