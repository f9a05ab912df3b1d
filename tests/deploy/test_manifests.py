"""deploy/ rendered by the real kustomize: the pieces agree with each other and with writeback's config schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.deploy.support import documents, find, render
from writeback.config import parse_config
from writeback.service.shares import target_lease_name


@pytest.fixture(scope="module")
def docs(kustomize_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return documents(render(kustomize=kustomize_bin, workdir=tmp_path_factory.mktemp("deploy")))


def _container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (deployment,) = find(docs, "Deployment")
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def test_every_namespaced_object_is_in_the_writeback_namespace(docs: list[dict[str, Any]]) -> None:
    (ns,) = find(docs, "Namespace")
    assert ns["metadata"]["name"] == "writeback"
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    for d in docs:
        if d["kind"] not in cluster_scoped:
            assert d["metadata"]["namespace"] == "writeback", d["metadata"]["name"]


def test_config_map_holds_a_valid_config_that_matches_the_manifests(docs: list[dict[str, Any]]) -> None:
    (cm,) = find(docs, "ConfigMap", "writeback-config")
    config = parse_config(YAML(typ="safe", pure=True).load(cm["data"]["config.yaml"]), source="deploy/config.yaml")
    assert config.leader.enabled and config.leader.namespace == "writeback"
    assert all(c.in_cluster for c in config.clusters)
    state_ns, _, state_name = (config.state_configmap or "").partition("/")
    (role,) = find(docs, "Role")
    named = [r for r in role["rules"] if r.get("resourceNames")]
    assert state_ns == "writeback" and any(state_name in r["resourceNames"] for r in named)
    port = int(config.metrics.address.rsplit(":", 1)[1])
    container = _container(docs)
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"metrics": port}
    assert container["args"][:3] == ["run", "--config", "/etc/writeback/config.yaml"]
    workdir = container["args"][container["args"].index("--workdir") + 1]  # the git clones: an emptyDir
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in find(docs, "Deployment")[0]["spec"]["template"]["spec"]["volumes"]}
    assert volumes[mounts["/etc/writeback"]]["configMap"]["name"] == cm["metadata"]["name"]
    assert "emptyDir" in volumes[mounts[workdir]]
    env = {e["name"]: e for e in container["env"]}
    for target in config.targets:
        token = target.forge.token if target.forge else None
        if token and token.env:
            ref = env[token.env]["valueFrom"]["secretKeyRef"]  # a reference, never a value
            assert ref["name"] and ref["key"] and "value" not in env[token.env]
    assert env["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"  # the Lease identity
    assert len(target_lease_name(config.targets[0].name)) <= 253


def test_pod_is_locked_down(docs: list[dict[str, Any]]) -> None:
    (deployment,) = find(docs, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    container = _container(docs)
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"] and container["resources"]["limits"]["memory"]
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    for writable in ("/tmp", "/home/writeback", "/var/lib/writeback"):  # HOME, TMPDIR, git work dir (Dockerfile)
        assert "emptyDir" in volumes[mounts[writable]], writable
    assert all(m.get("readOnly") for m in container["volumeMounts"] if "emptyDir" not in volumes[m["name"]])
    assert not any("secret" in v and v["secret"]["secretName"].endswith("tokens") for v in volumes.values()), (
        "tokens come in as env references, not as a mounted Secret"
    )


def test_no_rule_grants_secrets_wildcards_or_destructive_verbs(docs: list[dict[str, Any]]) -> None:
    for role in find(docs, "ClusterRole") + find(docs, "Role"):
        for rule in role["rules"]:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"]
            assert "secrets" not in rule["resources"]
            assert not {"escalate", "bind", "impersonate", "deletecollection"} & set(rule["verbs"])
            if "delete" in rule["verbs"]:
                assert role["kind"] == "Role" and rule["resources"] == ["leases"], rule
