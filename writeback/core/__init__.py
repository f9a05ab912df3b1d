"""The pure core of writeback.

Everything in this package is data manipulation: normalizing, ownership
(managedFields), diffing, deciding, locating sources, planning and rendering.
It does no I/O: no cluster, no git, no forge, no files, no processes, no sockets.
Inputs arrive as plain data (mappings, strings, frozen dataclasses) and results
leave the same way. import-linter enforces this (see pyproject.toml).
"""
