"""Listeners and connections: moves bytes between sockets and the sans-I/O layers."""
