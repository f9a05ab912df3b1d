"""The names a person gives a kind on the command line, as kubectl takes them: ``Deployment``, ``deployment``,
``deployments``, ``deploy``, ``deployments.apps``, ``hpa``. Pure.

``--kinds deploy,cm`` names kinds by these; :func:`matches` tells whether one name means a (group, kind).
"""

from __future__ import annotations

__all__ = ["SHORT_NAMES", "matches", "plural", "split_names"]

# kubectl's short names of the built-in kinds (``kubectl api-resources``): short name -> (group, kind)
SHORT_NAMES: dict[str, tuple[str, str]] = {
    "cm": ("", "ConfigMap"),
    "cs": ("", "ComponentStatus"),
    "ep": ("", "Endpoints"),
    "ev": ("", "Event"),
    "limits": ("", "LimitRange"),
    "ns": ("", "Namespace"),
    "no": ("", "Node"),
    "pvc": ("", "PersistentVolumeClaim"),
    "pv": ("", "PersistentVolume"),
    "po": ("", "Pod"),
    "rc": ("", "ReplicationController"),
    "quota": ("", "ResourceQuota"),
    "sa": ("", "ServiceAccount"),
    "svc": ("", "Service"),
    "crd": ("apiextensions.k8s.io", "CustomResourceDefinition"),
    "crds": ("apiextensions.k8s.io", "CustomResourceDefinition"),
    "ds": ("apps", "DaemonSet"),
    "deploy": ("apps", "Deployment"),
    "rs": ("apps", "ReplicaSet"),
    "sts": ("apps", "StatefulSet"),
    "hpa": ("autoscaling", "HorizontalPodAutoscaler"),
    "cj": ("batch", "CronJob"),
    "csr": ("certificates.k8s.io", "CertificateSigningRequest"),
    "ing": ("networking.k8s.io", "Ingress"),
    "netpol": ("networking.k8s.io", "NetworkPolicy"),
    "pdb": ("policy", "PodDisruptionBudget"),
    "pc": ("scheduling.k8s.io", "PriorityClass"),
    "sc": ("storage.k8s.io", "StorageClass"),
}


def plural(kind: str) -> str:
    """The resource name Kubernetes derives from a kind (as its default RESTMapper does): lower case, plural."""
    k = kind.lower()
    if k.endswith(("s", "x", "z", "ch", "sh")):
        return k + "es"
    if k.endswith("y") and len(k) > 1 and k[-2] not in "aeiou":
        return k[:-1] + "ies"
    return k + "s"


def split_names(text: str) -> tuple[str, ...]:
    """``deploy,cm svc`` -> ``("deploy", "cm", "svc")``: comma or space separated, empty parts dropped."""
    return tuple(part for chunk in text.split(",") for part in chunk.split() if part)


def matches(name: str, *, group: str, kind: str) -> bool:
    """Whether the command-line ``name`` means the kind ``kind`` of API group ``group``.

    ``name`` is a kind (any case), its resource name (plural or singular) or a short name, optionally followed by
    ``.group`` (``deployments.apps``, ``ClusterIssuer.cert-manager.io``); without a group it matches any group.
    """
    word, _, named_group = name.partition(".")
    short = SHORT_NAMES.get(word.lower())
    if short is not None and not named_group:
        return short == (group, kind)
    if named_group and named_group.lower() != group.lower():
        return False
    return word.lower() in (kind.lower(), plural(kind))
