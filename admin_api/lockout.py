"""Lockout after repeated failed sign-ins (pure: a clock value is passed in).

A :class:`FailureCount` is the failures since the first one of the current window. After
``max_failures`` failures within ``window`` seconds the subject (a user, or an address) is locked
for ``lockout`` seconds: every attempt is refused without checking the password, even a right
one, and audited. A success clears the count; a failure after the window has passed starts a new
count. Users' counts live in their SQL row (they survive a restart and are shared by every admin
API process on the store); addresses' (and unknown user names') counts in memory
(:class:`LockoutTable`, bounded), so an unknown name locks exactly like a real one and the
answers do not tell which names exist.
Defaults (docs/security.md): 5 failures per user, 20 per address, within 15 minutes, lock for 15
minutes (``SignIn.*`` keys).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

MAX_TRACKED_ADDRESSES: Final = 10_000


@dataclass(frozen=True, slots=True)
class LockoutPolicy:
    max_failures: int
    window: float  # seconds
    lockout: float  # seconds


@dataclass(frozen=True, slots=True)
class FailureCount:
    count: int = 0
    since: float | None = None  # the first failure of the window
    locked_until: float | None = None

    def locked_for(self, now: float) -> float:
        """Seconds left of the lockout (0: not locked)."""
        if self.locked_until is None or now >= self.locked_until:
            return 0.0
        return self.locked_until - now


def after_failure(state: FailureCount, now: float, policy: LockoutPolicy) -> FailureCount:
    """The count after one more failure at ``now`` (locked once it reaches the maximum)."""
    lock_over = state.locked_until is not None and now >= state.locked_until
    if state.since is None or now - state.since > policy.window or lock_over:
        state = FailureCount(0, now, None)  # a new window (or the lockout has run out)
    count = state.count + 1
    if count >= policy.max_failures:
        return replace(state, count=count, locked_until=now + policy.lockout)
    return replace(state, count=count)


class LockoutTable:
    """Failure counts by key (a client address, an unknown user name), in memory, at most
    10,000 (the oldest forgotten)."""

    def __init__(self, policy: LockoutPolicy) -> None:
        self.policy = policy
        self._counts: dict[str, FailureCount] = {}

    def locked_for(self, key: str, now: float) -> float:
        state = self._counts.get(key)
        return 0.0 if state is None else state.locked_for(now)

    def failed(self, key: str, now: float) -> FailureCount:
        state = after_failure(self._counts.pop(key, FailureCount()), now, self.policy)
        while len(self._counts) >= MAX_TRACKED_ADDRESSES:
            del self._counts[next(iter(self._counts))]
        self._counts[key] = state  # (re)inserted last: the oldest are first
        return state

    def succeeded(self, key: str) -> None:
        self._counts.pop(key, None)
