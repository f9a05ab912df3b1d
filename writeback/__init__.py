"""writeback: write a person's live Kubernetes changes back into Git, as reviewed pull requests."""

__version__ = "0.1.0"
