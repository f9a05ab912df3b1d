#!/usr/bin/env python3
"""One whole process of the patch benchmark (bench/bench_patch.py): edit every file listed in a cases file.

    python3 bench/patch_worker.py writeback|ruamel CASES.json DIR

``writeback``: ``apply_edits`` (splice, then verification), ``ruamel``: round-trip load, set, dump. Each file of
DIR named in CASES.json is read, edited (one scalar) and written back. A file the tool cannot edit is counted on
stderr and left as it was.
"""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any


def _writeback(text: str, case: dict[str, Any]) -> str:
    from writeback.kube.pathtypes import Index, Key
    from writeback.yaml.edit import Edit, apply_edits

    path = tuple(Key(s) if isinstance(s, str) else Index(s) for s in case["path"])
    return apply_edits(text, [Edit(document=case["document"], path=path, value=case["value"])], source=case["file"])


def _ruamel(text: str, case: dict[str, Any]) -> str:
    from ruamel.yaml import YAML

    yaml = YAML()
    docs = list(yaml.load_all(text))
    node: Any = docs[case["document"]]
    for seg in case["path"][:-1]:
        node = node[seg]
    node[case["path"][-1]] = case["value"]
    out = io.StringIO()
    yaml.dump_all(docs, out)
    return out.getvalue()


def main() -> int:
    tool, cases_file, workdir = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    edit = {"writeback": _writeback, "ruamel": _ruamel}[tool]
    failed = 0
    for case in json.loads(cases_file.read_text(encoding="utf-8")):
        target = workdir / case["file"]
        try:
            target.write_bytes(edit(target.read_bytes().decode("utf-8"), case).encode("utf-8"))  # CRLF kept
        except Exception as e:  # a tool that cannot edit a file: counted, the others go on
            failed += 1
            print(f"{case['file']}: {type(e).__name__}: {str(e)[:200]}", file=sys.stderr)
    print(json.dumps({"failed": failed}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
