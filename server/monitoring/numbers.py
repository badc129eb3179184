"""Numbers as text, the one way /stats and the meta-subjects print them."""

from __future__ import annotations


def number_text(value: float | int) -> str:
    """``3`` for whole numbers (``3.0`` too), else the shortest repr (``2.5``, ``1e-07``)."""
    if isinstance(value, int) or float(value).is_integer():
        return str(int(value))
    return repr(float(value))
