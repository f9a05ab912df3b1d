#!/usr/bin/env python3
"""The floor of a `writeback diff` (and `plan`) cycle, run as its own process by bench_scale.py.

What any tool comparing a cluster with a Git repo must do at least, with the same Python client:

- a bare paginated list (``limit``/``continue``, raw JSON, no model classes) of each kind in each namespace;
- a plain parse of every YAML file of the repo path with a C-based safe loader (``yaml.CSafeLoader``);
- for ``plan``, also a round-trip parse (ruamel.yaml, which keeps positions) of only the files that get edited.

    python3 bench/scale_floor.py --kubeconfig K --namespaces a,b --repo R --path apps [--roundtrip FILE ...]

Prints one JSON line: how many objects were listed and documents parsed.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

import yaml

KINDS = (("/apis/apps/v1", "deployments"), ("/api/v1", "configmaps"), ("/api/v1", "services"))


def bare_list(api: Any, *, namespaces: list[str], page_size: int) -> int:
    listed = 0
    for prefix, plural in KINDS:
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
    ap.add_argument("--repo", type=Path, required=True)
    ap.add_argument("--path", default=".")
    ap.add_argument("--page-size", type=int, default=500)
    ap.add_argument("--roundtrip", type=Path, nargs="*", default=[], help="repo-relative files plan edits")
    args = ap.parse_args()
    from kubernetes import config

    api = config.new_client_from_config(config_file=args.kubeconfig)  # type: ignore[no-untyped-call]
    listed = bare_list(api, namespaces=args.namespaces.split(","), page_size=args.page_size)
    parsed = parse_repo(args.repo / args.path)
    rt = roundtrip([args.repo / f for f in args.roundtrip])
    print(json.dumps({"listed": listed, "documents": parsed, "roundtrip_documents": rt}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
