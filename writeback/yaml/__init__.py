"""YAML: the one bounded loader (reading) and the minimal, comment-preserving editor (edit). Pure."""
