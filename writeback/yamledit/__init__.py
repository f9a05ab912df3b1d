"""Minimal, comment-preserving YAML edits: text in, text out.

Nodes are located with ruamel.yaml in round-trip mode, and the original text is
spliced; a file is never re-serialized. Pure: no I/O.
"""

from writeback.yamledit.documents import Document, ScalarInfo, iter_scalars, load_documents
from writeback.yamledit.editing import Edit, apply_edits
from writeback.yamledit.errors import EditRefused, VerifyError, YamlSyntaxError

__all__ = [
    "Document",
    "Edit",
    "EditRefused",
    "ScalarInfo",
    "VerifyError",
    "YamlSyntaxError",
    "apply_edits",
    "iter_scalars",
    "load_documents",
]
