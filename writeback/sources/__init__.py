"""Where a drifted field is written: the sources of desired objects (plain manifests, Kustomize, Helm)."""
