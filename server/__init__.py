"""pushgrid push server."""
