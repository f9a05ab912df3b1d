"""Helpers shared by several test directories: git repos, the CLI runner, writeback service processes, coordinators."""
