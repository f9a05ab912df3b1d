"""Glue: adapters + the pure core, one step of the pipeline per module."""
