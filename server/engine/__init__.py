"""Engines order, number, cache and replicate messages. See :class:`server.engine.base.Engine`."""

from .base import Engine, EngineStats, Published, PublishRequest, Recovery, Snapshot

__all__ = ["Engine", "EngineStats", "PublishRequest", "Published", "Recovery", "Snapshot"]
