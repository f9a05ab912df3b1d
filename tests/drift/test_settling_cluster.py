"""The settle stage on the real kube-apiserver (issue 23 §1): objects only the GitOps applier wrote are settled by
their managers, while a person's ``kubectl edit`` still drifts, a removal included (which leaves no managedFields
entry at all: the real API server drops the field from the applier's set and records no remover).

Git is committed an hour before the sync (the applier's Apply is newer than Git's change), then applied server-side
as Argo CD and Flux apply; then a person edits with the real kubectl.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.drift.support import configmap, drifts_of, sync, write
from tests.support.cli import run_cli
from tests.support.gitrepos import git, init_repo
from tests.support.objects import deployment

pytestmark = pytest.mark.controlplane

SETTLED = "[rule: settled-by-managers]"

# A KUBE_EDITOR that deletes the keys WB_DROP names (JSON: a list of key paths) from the object kubectl edit opens,
# as a person does in vi.
EDITOR = """\
import json, os, sys
import yaml
p = sys.argv[-1]
doc = yaml.safe_load(open(p))
for path in json.loads(os.environ["WB_DROP"]):
    node = doc
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
open(p, "w").write(yaml.safe_dump(doc))
"""


def _managed(controlplane: Any, ns: str, resource: str) -> list[dict[str, Any]]:
    out = controlplane.kubectl("get", resource, "-n", ns, "-o", "json", "--show-managed-fields").stdout
    entries: list[dict[str, Any]] = json.loads(out)["metadata"]["managedFields"]
    return entries


@pytest.mark.parametrize("mode", ["argocd-server-side", "flux-kustomize-controller"])
def test_a_persons_kubectl_edit_still_drifts_while_applier_only_objects_are_settled(
    controlplane: Any, namespace: str, tmp_path: Path, mode: str
) -> None:
    ns = namespace
    repo = tmp_path / "gitops"
    init_repo(repo)
    files = [
        write(repo, "apps/untouched.yaml", deployment("untouched", env={"LOG_LEVEL": "info"})),
        write(repo, "apps/settings.yaml", configmap("settings", {"mode": "strict", "level": "info"})),
        write(repo, "apps/limits.yaml", configmap("limits", {"cpu": "1", "memory": "1Gi"})),
        write(repo, "apps/web.yaml", deployment("web", env={"LOG_LEVEL": "info", "REGION": "eu"})),
        write(repo, "apps/image.yaml", deployment("image")),
    ]
    git("add", "-A", cwd=repo)
    an_hour_ago = {"GIT_COMMITTER_DATE": f"@{int(time.time()) - 3600} +0000"}
    subprocess.run(["git", "commit", "-qm", "apps"], cwd=repo, check=True, env={**os.environ, **an_hour_ago})
    sync(controlplane, mode, ns, *files)

    editor = tmp_path / "editor.py"
    editor.write_text(EDITOR)

    def remove(resource: str, *paths: list[Any]) -> None:
        env = {"KUBE_EDITOR": f"{sys.executable} {editor}", "WB_DROP": json.dumps(paths)}
        controlplane.kubectl("edit", resource, "-n", ns, env=env)

    remove("configmap/settings", ["data", "level"])  # a removal only
    remove("deployment/web", ["spec", "template", "spec", "containers", 0, "env", 1])  # an env item removed
    controlplane.kubectl("set", "image", "deployment/image", "-n", ns, "app=nginx:1.27")

    # what a removal leaves on the real API server: no entry by the person, the applier's Apply time unchanged
    (applier,) = _managed(controlplane, ns, "configmap/settings")
    assert applier["operation"] == "Apply" and "f:level" not in applier["fieldsV1"]["f:data"], applier
    assert {e["manager"] for e in _managed(controlplane, ns, "deployment/web")} == {applier["manager"]}

    code, out, err = run_cli("diff", "--repo", str(repo), "--path", "apps", "--kubeconfig", controlplane.kubeconfig,
                             "-n", ns, "--output", "json", "--explain")  # fmt: skip
    assert code == 0, out + err
    doc = json.loads(out)
    settled = {d["resource"]["name"] for d in doc["dropped"] if SETTLED in d["rule"]}
    assert settled == {"untouched", "limits"}, settled
    assert not drifts_of(doc, kind="Deployment", name="untouched") and not drifts_of(doc, kind="ConfigMap",
                                                                                     name="limits")  # fmt: skip
    (level,) = drifts_of(doc, kind="ConfigMap", name="settings")
    assert (level["path"], level["op"], level["decision"], level["manager"]) == ("data.level", "remove",
                                                                                 "writeback", None)  # fmt: skip
    (region,) = drifts_of(doc, kind="Deployment", name="web")
    assert region["op"] == "remove" and region["decision"] == "writeback", region
    assert "env[name=REGION]" in region["path"], region
    (image,) = [d for d in drifts_of(doc, kind="Deployment", name="image") if d["decision"] == "writeback"]
    assert (image["manager"], image["live"]) == ("kubectl-set", "nginx:1.27"), image

    # the text report without --explain says nothing about the stage: the same drifts as ever
    code, text, err = run_cli("diff", "--repo", str(repo), "--path", "apps", "--kubeconfig", controlplane.kubeconfig,
                              "-n", ns)  # fmt: skip
    assert code == 0 and "settled" not in text, text + err
