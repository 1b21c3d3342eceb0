"""Exports a finished run (report.json) to experiment trackers: trackers.py (stdlib only)."""
