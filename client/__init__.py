"""pushgrid asyncio client SDK.

Quick start::

    from pushgrid.client import PushgridClient

    async with PushgridClient(["127.0.0.1:8800"]) as pg:
        await pg.subscribe(["/Stocks/NYSE/IBM"])
        result = await pg.publish("/Stocks/NYSE/IBM", "193", {"volume": "6.62M"})
        async for message in pg.messages():
            print(message.subject, message.content, message.type)
"""

from __future__ import annotations

from pushgrid.protocol.frames import Position

from .backoff import Backoff, BackoffPolicy
from .client import (
    ConnectFailed,
    MessageCallback,
    PresenceCallback,
    PresenceRefused,
    PushgridClient,
    StatusCallback,
)
from .closecodes import ReconnectRule, rule_for_close
from .models import (
    Message,
    MessageType,
    Presence,
    PresenceEvent,
    PresentClient,
    PublishResult,
    PublishStatus,
    QoS,
    Status,
    StatusEvent,
)
from .recovery import Action, Decision, RecoveryTracker
from .servers import ServerAddress, ServerPool, parse_server, parse_servers

__all__ = [
    "Action",
    "Backoff",
    "BackoffPolicy",
    "ConnectFailed",
    "Decision",
    "Message",
    "MessageCallback",
    "MessageType",
    "Position",
    "Presence",
    "PresenceCallback",
    "PresenceEvent",
    "PresenceRefused",
    "PresentClient",
    "PublishResult",
    "PublishStatus",
    "PushgridClient",
    "QoS",
    "ReconnectRule",
    "RecoveryTracker",
    "ServerAddress",
    "ServerPool",
    "Status",
    "StatusCallback",
    "StatusEvent",
    "parse_server",
    "parse_servers",
    "rule_for_close",
]
