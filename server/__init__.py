"""pushgrid push server."""

__version__ = "0.1.0"
