"""Helpers shared by several test directories (imported as ``support.<module>``: tests/ is on sys.path)."""
