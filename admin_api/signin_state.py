"""What the sign-in routes share across requests: the lockout tables and the policies."""

from __future__ import annotations

from dataclasses import dataclass, field

from pushgrid.config import SignInSettings

from .lockout import LockoutPolicy, LockoutTable


def user_policy(settings: SignInSettings) -> LockoutPolicy:
    return LockoutPolicy(
        settings.signin_max_failures,
        settings.signin_failure_window,
        settings.signin_lockout_seconds,
    )


def address_policy(settings: SignInSettings) -> LockoutPolicy:
    return LockoutPolicy(
        settings.signin_address_max_failures,
        settings.signin_failure_window,
        settings.signin_lockout_seconds,
    )


@dataclass
class SignInState:
    settings: SignInSettings
    addresses: LockoutTable = field(init=False)
    unknown_names: LockoutTable = field(init=False)

    def __post_init__(self) -> None:
        self.addresses = LockoutTable(address_policy(self.settings))
        self.unknown_names = LockoutTable(user_policy(self.settings))
