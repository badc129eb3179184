"""Indicators, sampling and rolling-window statistics."""
