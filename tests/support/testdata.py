"""Where the third-party test data lives: tests/data/, byte-for-byte copies with their licenses (tests/data/SOURCES.md).

No test reads anything outside the repository; ``tests/data/refresh`` re-copies the data from where it
arrives, when that is present.
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
FORGE_API = DATA / "forge-api"  # the official GitHub and GitLab operations, with schemas
CRDS = DATA / "crds"  # Argo CD, Flux and KEDA CRDs
YAML_CORPUS = DATA / "yaml-corpus" / "files"  # real-world Kubernetes YAML
CHARTS = DATA / "charts"  # podinfo and bitnami nginx (with its common library chart)
