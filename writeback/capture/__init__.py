"""Hotfix capture, the pure half: whose write is a person's, and what may be stored (redaction). Pure."""
