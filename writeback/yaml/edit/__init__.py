"""Minimal, comment-preserving YAML edits: text in, text out.

Nodes are located with ruamel.yaml in round-trip mode, and the original text is
spliced; a file is never re-serialized. Pure: no I/O.
"""

from writeback.yaml.edit.documents import Document, ScalarInfo, iter_scalars, load_documents
from writeback.yaml.edit.editing import Edit, apply_edits
from writeback.yaml.edit.errors import EditRefused, VerifyError, YamlSyntaxError

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
