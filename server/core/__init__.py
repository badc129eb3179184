"""Subscriptions, snapshots, recovery and fan-out, independent of sockets and of the engine."""
