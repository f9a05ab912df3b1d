"""Kubernetes facts every layer shares: object references, field paths, kinds, List expansion. Pure."""
