"""Kustomize overlays: a provenance model read from the repo texts, and where an edit lands. Pure."""
