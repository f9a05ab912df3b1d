#!/usr/bin/env python3
"""writeback's normalizer as a filter, for bench_neat.py: a `kubectl get -o json` List on stdin, the List out.

Each item goes through what writeback drops from a live object before diffing when it knows nothing of Git:
``core.normalizing.normalize`` (server-populated fields, bookkeeping annotations and labels, controller-owned
metadata), then the built-in defaults table (``core.defaults``, the offline stand-in for a dry-run). Identity
fields (apiVersion, kind, metadata.name, metadata.namespace) are put back, as kubectl-neat keeps them.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from writeback.drift.evidence.defaults import is_default
from writeback.drift.normalizing import normalize
from writeback.kube.pathtypes import FieldPath, Index, Key
from writeback.kube.refs import ObjectRef
from writeback.model import Side


def drop_defaults(node: Any, *, kind: str, path: FieldPath = ()) -> Any:
    if isinstance(node, dict):
        out = {}
        for k, v in node.items():
            p = (*path, Key(k))
            if not isinstance(v, dict | list) and is_default(kind=kind, path=p, value=v, parent=node):
                continue
            out[k] = drop_defaults(v, kind=kind, path=p)
        return out
    if isinstance(node, list):
        return [drop_defaults(v, kind=kind, path=(*path, Index(i))) for i, v in enumerate(node)]
    return node


def neat(item: dict[str, Any]) -> dict[str, Any]:
    meta = item.get("metadata") or {}
    ref = ObjectRef(api_version=item["apiVersion"], kind=item["kind"], namespace=meta.get("namespace"),
                    name=meta["name"])  # fmt: skip
    body = drop_defaults(normalize(item, ref=ref, side=Side.LIVE).body, kind=ref.kind)
    identity = {"name": ref.name, **({"namespace": ref.namespace} if ref.namespace else {})}
    body["metadata"] = {**identity, **(body.get("metadata") or {})}
    return {"apiVersion": ref.api_version, "kind": ref.kind, **body}


def main() -> int:
    doc = json.load(sys.stdin)
    doc["items"] = [neat(i) for i in doc["items"]]
    json.dump(doc, sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
