"""Minimal, comment-preserving YAML edits: text in, text out.

Nodes are located with ruamel.yaml in round-trip mode, and the original text is
spliced; a file is never re-serialized. Pure: no I/O.
"""
