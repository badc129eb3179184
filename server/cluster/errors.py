"""Errors of the cluster layer."""

from __future__ import annotations


class ClusterError(Exception):
    """The cluster cannot be set up as configured (a start-up error naming what to fix)."""
