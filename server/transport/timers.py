"""What one connection's timers demand at a tick: deadlines, keepalives, pings, dead peers.

:func:`due` is the policy, a pure function of the connection's state and timestamps, so every
rule is unit-tested without a loop or a socket (``tests/unit/test_transport_timers.py``);
:func:`check` carries the decision out on a connection. :func:`next_check` says when ``due`` can
next ask for anything if only time passes: the server's ticker (once per period, a quarter of the
keepalive interval, at most 1 s) looks only at the connections whose time came, in
:class:`~server.transport.wheel.ConnectionSet` (ADR 063), not at every connection every period.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Flag, auto
from typing import Protocol

from pushgrid.metrics.counters import Counters
from pushgrid.protocol.errors import CloseCode

from ..framing.outframe import OutFrame
from .states import ConnState


class Due(Flag):
    """What a tick asks of one connection (PING and KEEPALIVE may come together)."""

    NOTHING = 0
    ABORT = auto()  # a deadline passed, or a non-WebSocket peer went silent
    CLOSE_SILENT = auto()  # a WebSocket peer sent nothing for the keepalive timeout
    PING = auto()  # nothing came in for an interval: ask the peer
    KEEPALIVE = auto()  # nothing went out for an interval: tell the peer we are here


@dataclass(frozen=True, slots=True)
class KeepalivePolicy:
    interval: float  # KeepaliveInterval: the most a peer waits for data from us
    timeout: float  # KeepaliveTimeout: the most we wait for data from a peer


class Timed(Protocol):
    """The part of a connection the timers read and act on."""

    state: ConnState
    deadline: float | None
    last_in: float
    last_out: float
    last_ping: float

    def abort(self) -> None: ...
    def close(self, code: int, reason: str) -> None: ...
    def ping(self) -> None: ...
    def send(self, frame: OutFrame) -> None: ...


def due(conn: Timed, now: float, policy: KeepalivePolicy) -> Due:
    """The timers' demand on ``conn`` at ``now``, by its state (server/transport/states.py)."""
    if conn.deadline is not None:  # request timer, drain or close in progress
        return Due.ABORT if now >= conn.deadline else Due.NOTHING
    silent = now - conn.last_in
    if conn.state is ConnState.STREAMING:  # an event stream only writes
        return Due.KEEPALIVE if now - conn.last_out >= policy.interval else Due.NOTHING
    if conn.state is ConnState.RESPONDING:
        # the request arrived whole; the client waits for our answer, its silence is no fault:
        # the handler is bounded by its own timeouts (a cluster publish: ClusterPublishTimeout,
        # which may exceed KeepaliveTimeout)
        return Due.NOTHING
    if conn.state is not ConnState.OPEN and conn.state is not ConnState.PAUSED:
        # an HTTP client, or a closing one, that went silent
        return Due.ABORT if silent > policy.timeout else Due.NOTHING
    if silent > policy.timeout:
        return Due.CLOSE_SILENT
    # Both are decided before acting: the ping itself counts as output.
    wanted = Due.KEEPALIVE if now - conn.last_out >= policy.interval else Due.NOTHING
    if silent >= policy.interval and now - conn.last_ping >= policy.interval:
        wanted |= Due.PING
    return wanted


def check(
    conn: Timed, now: float, policy: KeepalivePolicy, keepalive: OutFrame, counters: Counters
) -> None:
    """Carry out :func:`due` on ``conn``."""
    wanted = due(conn, now, policy)
    if Due.ABORT in wanted:
        conn.abort()
    elif Due.CLOSE_SILENT in wanted:
        counters.keepalive_timeouts_total += 1
        conn.close(CloseCode.KEEPALIVE_TIMEOUT, "no data from client: keepalive timeout")
    else:
        if Due.PING in wanted:
            conn.ping()
        if Due.KEEPALIVE in wanted:
            conn.send(keepalive)


def next_check(conn: Timed, now: float, policy: KeepalivePolicy) -> float:
    """The earliest time :func:`due` may ask anything of ``conn`` while only time passes.

    Its timestamps only move later (which only delays what is due); a new deadline or state
    wakes the connection (:meth:`~server.transport.wheel.ConnectionSet.wake`), so a time taken
    from here is never too late. Before it, ``due`` says NOTHING (a property test holds it to
    that); a time already past means "at the next tick".
    """
    if conn.deadline is not None:
        return conn.deadline
    state = conn.state
    if state is ConnState.STREAMING:
        return conn.last_out + policy.interval
    if state is ConnState.RESPONDING:
        return now + policy.interval  # nothing until its state changes, which wakes it
    if state is not ConnState.OPEN and state is not ConnState.PAUSED:
        return conn.last_in + policy.timeout
    keepalive = conn.last_out + policy.interval
    ping = max(conn.last_in, conn.last_ping) + policy.interval
    return min(keepalive, ping, conn.last_in + policy.timeout)
