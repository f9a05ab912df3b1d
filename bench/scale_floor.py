#!/usr/bin/env python3
"""The floor of a `writeback diff` (and `plan`) cycle, run as its own process by bench_scale.py.

What any tool comparing a cluster with a Git repo must do at least, with the same Python client (the "lean"
floor of issue 23):

- a bare paginated list of each kind in each namespace: the very requests writeback's ``list_objects`` sends
  (``GET .../namespaces/NS/PLURAL?limit=500[&continue=...]``, ``Accept: application/json``), sent through
  ``ApiClient.call_api`` and read as raw bytes decoded by ``json.loads``: no typed API class, no model class
  (the typed ``CoreV1Api().list_namespaced_config_map`` path costs about 2 s of model imports and
  deserialization that writeback never pays); the printed ``model_modules`` counts the model modules loaded;
- a plain parse of every YAML file of the repo path with libyaml's C safe loader (``yaml.CSafeLoader``);
- for ``plan``, also a round-trip parse (ruamel.yaml, which keeps positions) of only the files that get edited;
- with ``--list-only``, the list alone: the baseline of a warm service cycle, which parses no YAML.

    python3 bench/scale_floor.py --kubeconfig K --namespaces a,b [--resources apps/v1/deployments,v1/configmaps]
        --repo R --path apps [--roundtrip FILE ...] [--list-only]

Prints one JSON line: how many objects were listed and documents parsed, and the CPU and wall seconds of the list
alone (``list_cpu``, ``list_wall``: no start, no imports).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

KINDS = (("/apis/apps/v1", "deployments"), ("/api/v1", "configmaps"), ("/api/v1", "services"))


def parse_resources(text: str) -> tuple[tuple[str, str], ...]:
    """``apps/v1/deployments,v1/configmaps`` -> ((``/apis/apps/v1``, ``deployments``), (``/api/v1``, ...))."""
    out = []
    for item in text.split(","):
        *group_version, plural = item.strip().split("/")
        if group_version == ["v1"]:
            out.append(("/api/v1", plural))
        elif len(group_version) == 2:
            out.append((f"/apis/{group_version[0]}/{group_version[1]}", plural))
        else:
            raise ValueError(f"--resources: {item!r} is not GROUP/VERSION/PLURAL or v1/PLURAL")
    return tuple(out)


def bare_list(
    api: Any, *, namespaces: Sequence[str], page_size: int, resources: Sequence[tuple[str, str]] = KINDS
) -> int:
    listed = 0
    for prefix, plural in resources:
        for ns in namespaces:
            token = ""
            while True:
                query = [("limit", str(page_size))] + ([("continue", token)] if token else [])
                request = api.param_serialize(method="GET", resource_path=f"{prefix}/namespaces/{ns}/{plural}",
                                              query_params=query, header_params={"Accept": "application/json"},
                                              auth_settings=["BearerToken"])  # fmt: skip
                doc = json.loads(api.call_api(*request).read())
                listed += len(doc["items"])
                token = doc["metadata"].get("continue") or ""
                if not token:
                    break
    return listed


def parse_repo(top: Path) -> int:
    docs = 0
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith((".yaml", ".yml")):
                text = (Path(dirpath) / name).read_text(encoding="utf-8")
                docs += sum(1 for _ in yaml.load_all(text, Loader=yaml.CSafeLoader))
    return docs


def roundtrip(files: list[Path]) -> int:
    from ruamel.yaml import YAML

    docs = 0
    for p in files:
        docs += sum(1 for _ in YAML(typ="rt").load_all(p.read_text(encoding="utf-8")))
    return docs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--namespaces", required=True, help="comma-separated")
    ap.add_argument("--resources", help="comma-separated GROUP/VERSION/PLURAL (default: the scale world's three)")
    ap.add_argument("--list-only", action="store_true", help="the list alone: no YAML parse")
    ap.add_argument("--repo", type=Path)
    ap.add_argument("--path", default=".")
    ap.add_argument("--page-size", type=int, default=500)
    ap.add_argument("--roundtrip", type=Path, nargs="*", default=[], help="repo-relative files plan edits")
    args = ap.parse_args()
    if args.repo is None and not args.list_only:
        ap.error("--repo is required unless --list-only")
    resources = parse_resources(args.resources) if args.resources else KINDS
    from kubernetes import config

    api = config.new_client_from_config(config_file=args.kubeconfig)  # type: ignore[no-untyped-call]
    c0, t0 = time.process_time(), time.perf_counter()
    listed = bare_list(api, namespaces=args.namespaces.split(","), page_size=args.page_size, resources=resources)
    list_cpu, list_wall = time.process_time() - c0, time.perf_counter() - t0
    parsed = rt = 0
    if not args.list_only:
        parsed = parse_repo(args.repo / args.path)
        rt = roundtrip([args.repo / f for f in args.roundtrip])
    models = sum(1 for m in sys.modules if m.startswith("kubernetes.client.models."))
    out = {"listed": listed, "documents": parsed, "roundtrip_documents": rt, "model_modules": models,
           "libyaml": bool(yaml.__with_libyaml__), "list_cpu": list_cpu, "list_wall": list_wall}  # fmt: skip
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
