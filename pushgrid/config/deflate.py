"""The permessage-deflate part (RFC 7692, ADR 028), negotiated when the client offers it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DeflateSettings(BaseModel):
    """What ``Deflate`` (server/transport/context.py) is built from: the answer to an offer,
    the compressors, and the inflating bounds. That one message of the hard frame limit fits
    those bounds is checked across parts (``Settings``: the limit is the session's)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    per_message_deflate: bool = Field(default=True, alias="PerMessageDeflate")
    deflate_server_no_context_takeover: bool = Field(
        default=True, alias="DeflateServerNoContextTakeover"
    )
    deflate_client_no_context_takeover: bool = Field(
        default=True, alias="DeflateClientNoContextTakeover"
    )
    deflate_max_window_bits: int = Field(default=15, ge=9, le=15, alias="DeflateMaxWindowBits")
    deflate_min_size: int = Field(default=128, ge=0, alias="DeflateMinSize")
    deflate_level: int = Field(default=6, ge=1, le=9, alias="DeflateLevel")
    deflate_max_contexts: int = Field(default=1000, ge=0, alias="DeflateMaxContexts")
    # inflated bytes of compressed messages not yet whole, per client address and in all: a
    # fragment past either is refused with 1008 (docs/security.md)
    deflate_max_inflating_per_address: int = Field(
        default=8 * 1024 * 1024, ge=1, alias="DeflateMaxInflatingPerAddress"
    )
    deflate_max_inflating: int = Field(default=64 * 1024 * 1024, ge=1, alias="DeflateMaxInflating")

    def inflating_problem(self, frame_limit: int) -> str | None:
        """Why the inflating bounds cannot hold one message of ``frame_limit`` bytes (the hard
        frame limit), or None: otherwise a message the limit allows would be refused by them."""
        for key, value in (
            ("DeflateMaxInflatingPerAddress", self.deflate_max_inflating_per_address),
            ("DeflateMaxInflating", self.deflate_max_inflating),
        ):
            if value < frame_limit:
                return (
                    f"{key} = {value} is below the hard frame limit {frame_limit} "
                    "(max(1 MiB, 8 x MaxMessageSize)): one compressed message must fit in it"
                )
        if self.deflate_max_inflating < self.deflate_max_inflating_per_address:
            return (
                f"DeflateMaxInflating = {self.deflate_max_inflating} is below "
                f"DeflateMaxInflatingPerAddress = {self.deflate_max_inflating_per_address}"
            )
        return None
