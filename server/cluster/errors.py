"""Errors of the cluster layer."""

from __future__ import annotations

from pushgrid.protocol.exceptions import PushgridError


class ClusterError(PushgridError):
    """The cluster cannot be set up as configured (a start-up error naming what to fix)."""

    code = "cluster"
