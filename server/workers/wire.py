"""What the worker processes of one server say to each other on the mesh (ADR 044).

Each message is a msgspec Struct, MessagePack-encoded and prefixed by its length (4 bytes, big
endian). One ordered byte stream links each pair of processes, so the order a process writes
in is the order its peer reads in: a ``MeshInterest`` written before a ``MeshAsk`` for the
snapshot is seen first, and the forwards of one subject arrive in seq order.
"""

from __future__ import annotations

import struct
from typing import Any

import msgspec

from pushgrid.protocol.exceptions import EngineError

from ..cluster.isolation import Progress
from ..cluster.status import ClusterStatus
from ..engine.base import Published, PublishRequest, Recovery, Snapshot
from .delivery_share import DeliveryShipment

_LENGTH = struct.Struct(">I")
#: a mesh frame larger than this is a bug or a corrupt stream, never a message (MaxMessageSize
#: is far below it): the link is dropped rather than buffering without bound
MAX_MESH_FRAME = 64 * 1024 * 1024


class MeshHello(msgspec.Struct, tag=True):
    """The first frame on a link: who the writer is (its worker index)."""

    index: int


class MeshInterest(msgspec.Struct, tag=True):
    """The writer's first subscriber of ``subject`` arrived (``present``) or its last left."""

    subject: str
    present: bool


class MeshForward(msgspec.Struct, tag=True):
    """A message the owner numbered, for the writer's peer's subscribers."""

    message: Published


class MeshAsk(msgspec.Struct, tag=True):
    """A question to a subject's owner, answered by a ``MeshAnswer`` with the same ``ask_id``.

    ``kind``: ``publish`` (``request``), ``snapshot``, ``position``, ``recover`` (``epoch``,
    ``seq``) or ``history`` (``limit``); ``operation``: worker 0 asks any worker to run one of
    its monitoring operations on its own sessions (``name``, ``args``; ``subject`` empty)."""

    ask_id: int
    kind: str
    subject: str
    request: PublishRequest | None = None
    epoch: str = ""
    seq: int = 0
    limit: int = 0
    name: str = ""
    args: list[Any] = []


class MeshAnswer(msgspec.Struct, tag=True):
    """The owner's answer to a ``MeshAsk``: one of the values, or a refusal (``error``: the
    refusal's class name, ``code`` and ``reason``, raised again on the asking side)."""

    ask_id: int
    published: Published | None = None
    snapshot: Snapshot | None = None
    recovery: Recovery | None = None
    history: list[Published] | None = None
    position: tuple[str, int] | None = None
    error: str | None = None
    code: str = ""
    reason: str = ""
    value: Any = None  # an operation's result (builtins only)


class WorkerReport(msgspec.Struct, tag=True):
    """A worker's numbers of the last second, for worker 0 (the one monitoring view)."""

    index: int
    pid: int
    counters: dict[str, int]
    connections: int
    cpu_seconds: float
    rss_bytes: int
    open_files: int
    engine: list[int]  # subjects, cached messages, cached bytes, dropped snapshots
    sent_at: float  # Unix time
    # its clients' delivery reports since the last report (server/workers/delivery_share.py)
    delivery: DeliveryShipment | None = None
    # its event loop's lag (member panel probe): the last, the max over the panel's window
    loop_lag: float | None = None
    loop_lag_max: float | None = None
    # its whole member panel (``MemberPanel.as_dict``): worker 0 folds the server's panel
    panel: dict[str, Any] | None = None


class MeshSignal(msgspec.Struct, tag=True):
    """A message of the server's cluster-wide services (occupancy reports and asks) to every
    other worker (server/workers/member_bus.py)."""

    subject: str
    data: bytes


class MeshTally(msgspec.Struct, tag=True):
    """A worker's per-subject deltas (``Hub.tally`` rows) for worker 0's hot and watched
    subjects (server/workers/tally_share.py)."""

    rows: dict[str, list[int]]


class MeshSpent(msgspec.Struct, tag=True):
    """The publish tokens the writer's connections took per address since its last share
    (PublishRatePerAddress across workers: server/workers/address_rate.py)."""

    spent: dict[str, int]


class MeshCluster(msgspec.Struct, tag=True):
    """Worker 0's view of its cluster (its engine's status and stream progress), for the other
    workers of a cluster member: their health and isolation are the member's (ADR 067)."""

    status: ClusterStatus
    progress: Progress | None = None


MeshMessage = (
    MeshHello
    | MeshInterest
    | MeshForward
    | MeshAsk
    | MeshAnswer
    | WorkerReport
    | MeshSignal
    | MeshTally
    | MeshSpent
    | MeshCluster
)

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(MeshMessage)


def encode(message: MeshMessage) -> bytes:
    """One mesh frame: the length, then the message."""
    body = _encoder.encode(message)
    return _LENGTH.pack(len(body)) + body


class MeshFrameError(EngineError, ValueError):
    """The byte stream between two workers does not hold mesh frames (a bug or corruption): the
    link is dropped, the other worker's subscribers see a gap and recover (docs/workers.md)."""

    code = "mesh_frame"


class FrameReader:
    """Cuts a byte stream into mesh messages, whatever the reads' boundaries."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[MeshMessage]:
        buffer = self._buffer
        buffer += data
        out: list[MeshMessage] = []
        start = 0
        while len(buffer) - start >= 4:
            (length,) = _LENGTH.unpack_from(buffer, start)
            if length > MAX_MESH_FRAME:
                raise MeshFrameError(f"a mesh frame of {length} bytes")
            end = start + 4 + length
            if end > len(buffer):
                break
            try:
                with memoryview(buffer) as view:  # released before the buffer is cut below
                    out.append(_decoder.decode(view[start + 4 : end]))
            except msgspec.DecodeError as exc:
                raise MeshFrameError(str(exc)) from None
            start = end
        del buffer[:start]
        return out
