"""Rendering deploy/ with the real kustomize, as a user's overlay would."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def render(*, kustomize: Path, workdir: Path, namespace: str | None = None, suffix: str | None = None) -> str:
    """``kustomize build`` of deploy/, or of an overlay that moves it to ``namespace`` and suffixes every name."""
    root = DEPLOY
    if namespace or suffix:
        overlay = workdir / "overlay"
        overlay.mkdir(parents=True, exist_ok=True)
        lines = ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization"]
        if namespace:
            lines.append(f"namespace: {namespace}")
        if suffix:
            lines.append(f"nameSuffix: -{suffix}")
        lines += ["resources:", f"  - {os.path.relpath(DEPLOY, overlay)}"]
        (overlay / "kustomization.yaml").write_text("\n".join(lines) + "\n")
        root = overlay
    done = subprocess.run([str(kustomize), "build", str(root)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"kustomize build {root} failed:\n{done.stderr}"
    return done.stdout


def documents(text: str) -> list[dict[str, Any]]:
    return [d for d in YAML(typ="safe", pure=True).load_all(text) if d]


def find(docs: list[dict[str, Any]], kind: str, name_prefix: str = "") -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind and d["metadata"]["name"].startswith(name_prefix)]
