"""Ignore rules: configured rules, webhook presets, Argo CD ignoreDifferences, Flux ssa annotations. Pure.

Rules are never blanket: each names paths (the path grammar, with ``*``, ``[*]``, ``**`` and
list-key selectors) and may be narrowed to a kind, group, name, namespace and managers.
Presets describe what a known injector adds, so they only explain fields Git does not
declare (op ``add``): a person changing a declared ``sidecar.istio.io/inject`` is still drift.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from writeback.config import IgnoreRule
from writeback.core.diffing import get_at
from writeback.core.listkeys import KeyResolver, item_selector
from writeback.model import FieldOwner, FieldPath, Index, Key, ObjectRef, Op, PatternSegment, Segment, Select
from writeback.paths import match, parse_pattern

__all__ = ["PRESETS", "Ignores", "Preset", "build_ignores", "flux_skip"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Preset:
    """What a mutating-webhook injector adds to pods and pod templates."""

    name: str
    paths: tuple[str, ...]  # patterns of whole items/fields it injects
    annotation_prefixes: tuple[str, ...] = ()
    label_prefixes: tuple[str, ...] = ()


def _pod(*items: str) -> tuple[str, ...]:
    return tuple(f"**.{i}" for i in items)


PRESETS: Mapping[str, Preset] = {
    "istio": Preset(
        name="istio",
        paths=_pod(
            "containers[name=istio-proxy]",
            "initContainers[name=istio-init]",
            "initContainers[name=istio-validation]",
            "initContainers[name=istio-proxy]",
            *(
                f"volumes[name={v}]"
                for v in (
                    "istio-envoy",
                    "istio-data",
                    "istio-podinfo",
                    "istio-token",
                    "istiod-ca-cert",
                    "workload-socket",
                    "credential-socket",
                    "workload-certs",
                )
            ),
        ),
        annotation_prefixes=(
            "sidecar.istio.io/",
            "traffic.sidecar.istio.io/",
            "status.sidecar.istio.io/",
            "istio.io/",
            "kubectl.kubernetes.io/default-container",
        ),
        label_prefixes=("security.istio.io/", "service.istio.io/", "istio.io/"),
    ),
    "linkerd": Preset(
        name="linkerd",
        paths=_pod(
            "containers[name=linkerd-proxy]",
            "initContainers[name=linkerd-init]",
            "initContainers[name=linkerd-network-validator]",
            "initContainers[name=linkerd-proxy]",
            "volumes[name=linkerd-identity-end-entity]",
            "volumes[name=linkerd-proxy-init-xtables-lock]",
            "volumes[name=linkerd-identity-token]",
        ),
        annotation_prefixes=("linkerd.io/", "viz.linkerd.io/"),
        label_prefixes=("linkerd.io/",),
    ),
    "vault": Preset(
        name="vault",
        paths=_pod(
            "containers[name=vault-agent]",
            "initContainers[name=vault-agent-init]",
            "volumes[name=home-init]",
            "volumes[name=home-sidecar]",
            "volumes[name=vault-secrets]",
            "containers[*].volumeMounts[mountPath=/vault/secrets]",
            "initContainers[*].volumeMounts[mountPath=/vault/secrets]",
        ),
        annotation_prefixes=("vault.hashicorp.com/agent-inject-status", "vault.hashicorp.com/agent-"),
    ),
}


def _glob(pattern: str | None, value: str | None) -> bool:
    return pattern is None or pattern in ("", "*") or fnmatch.fnmatchcase(value or "", pattern)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Rule:
    patterns: tuple[tuple[PatternSegment, ...], ...]
    reason: str
    kind: str | None = None
    group: str | None = None
    name: str | None = None
    namespace: str | None = None
    managers: tuple[str, ...] = ()

    def applies(self, ref: ObjectRef, owner: FieldOwner | None) -> bool:
        if not (_glob(self.kind, ref.kind) and _glob(self.name, ref.name) and _glob(self.namespace, ref.namespace)):
            return False
        if self.group is not None and not (self.group == ref.group or (self.group and _glob(self.group, ref.group))):
            return False
        return not self.managers or (owner is not None and any(_glob(m, owner.manager) for m in self.managers))


# ------------------------------------------------------------------ jq (the simple forms Argo CD users write)

_JQ_TOKEN = re.compile(
    r"""\s*(?:
      \.(?P<name>[A-Za-z_][A-Za-z0-9_-]*)
    | \.?"(?P<quoted>(?:[^"\\]|\\.)*)"
    | \.?\[\s*"(?P<bracketed>(?:[^"\\]|\\.)*)"\s*\]
    | (?P<pipe>\|)(?=\s*\.)
    | (?P<all>\.?\[\s*\])
    | \.?\[\s*(?P<index>[0-9]+)\s*\]
    | \|\s*select\(\s*\.(?P<field>[A-Za-z_][A-Za-z0-9_-]*)\s*
        (?:(?P<cmp>==|!=)\s*(?P<value>"(?:[^"\\]|\\.)*"|[0-9]+|true|false)
          |\|\s*(?P<fn>startswith|endswith|contains|test)\(\s*(?P<arg>"(?:[^"\\]|\\.)*")\s*\))\s*\)
    )""",
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class _JqStep:
    key: str | None = None  # a map key; None: a list item
    index: int | None = None
    where: tuple[str, str, Any] | None = None  # (field, operator, value)


def _jq_parse(expr: str) -> tuple[_JqStep, ...] | None:
    """The steps of a simple jq path expression, or None when it is not one of the supported forms."""
    try:
        return _jq_steps(expr)
    except (ValueError, re.error):  # a bad escape in a string, or a bad regular expression for test()
        return None


def _jq_steps(expr: str) -> tuple[_JqStep, ...] | None:
    steps: list[_JqStep] = []
    pos, text = 0, expr.strip()
    while pos < len(text):
        m = _JQ_TOKEN.match(text, pos)
        if not m or m.end() == pos:
            return None
        pos = m.end()
        if m["name"] or m["quoted"] is not None or m["bracketed"] is not None:
            raw = m["name"] or m["quoted"] or m["bracketed"] or ""
            steps.append(_JqStep(key=raw if m["name"] else json.loads(f'"{raw}"')))
        elif m["pipe"]:
            continue
        elif m["all"]:
            steps.append(_JqStep())
        elif m["index"]:
            steps.append(_JqStep(index=int(m["index"])))
        elif m["field"]:
            if not steps or steps[-1].key is not None or steps[-1].where is not None:
                return None
            op, val = (m["cmp"], json.loads(m["value"])) if m["cmp"] else (m["fn"], json.loads(m["arg"]))
            if op == "test":
                re.compile(val)
            steps[-1] = _JqStep(index=steps[-1].index, where=(m["field"], op, val))
    return tuple(steps) if steps else None


def _jq_where(item: Any, where: tuple[str, str, Any]) -> bool:
    fld, op, want = where
    got = item.get(fld) if isinstance(item, Mapping) else None
    if op == "==":
        return bool(got == want)
    if op == "!=":
        return bool(got != want)
    if not isinstance(got, str) or not isinstance(want, str):
        return False
    if op == "test":
        return re.search(want, got) is not None
    return {"startswith": got.startswith, "endswith": got.endswith, "contains": got.__contains__}[op](want)


def _jq_match(steps: tuple[_JqStep, ...], path: FieldPath, bodies: Sequence[Any]) -> bool:
    if len(path) < len(steps):
        return False
    for j, step in enumerate(steps):
        seg = path[j]
        if step.key is not None:
            if seg != Key(step.key):
                return False
            continue
        if isinstance(seg, Key):
            return False
        item_path = path[: j + 1]
        items = [get_at(b, item_path) for b in bodies]
        if step.index is not None and not any(_position(b, item_path) == step.index for b in bodies):
            return False
        if step.where is not None and not any(_jq_where(i, step.where) for i in items):
            return False
    return True


def _position(body: Any, item_path: FieldPath) -> int | None:
    seg = item_path[-1]
    if isinstance(seg, Index):
        return seg.index
    items = get_at(body, item_path[:-1])
    if isinstance(seg, Select) and isinstance(items, list):
        want = dict(seg.keys)
        for i, item in enumerate(items):
            sel = item_selector(item, tuple(want))
            if sel is not None and dict(sel.keys) == want:
                return i
    return None


# ------------------------------------------------------------------ the rule set


@dataclass(frozen=True, slots=True, kw_only=True)
class _ArgoEntry:
    rule: _Rule  # kind/group/name/namespace filter; patterns unused
    pointers: tuple[tuple[str, ...], ...] = ()
    jq: tuple[tuple[_JqStep, ...], ...] = ()
    managers: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Ignores:
    rules: tuple[_Rule, ...] = ()
    presets: tuple[Preset, ...] = ()
    argo: tuple[_ArgoEntry, ...] = ()
    notes: tuple[str, ...] = ()
    _preset_patterns: tuple[tuple[Preset, tuple[tuple[PatternSegment, ...], ...]], ...] = field(default=())

    def rule_reason(self, *, ref: ObjectRef, path: FieldPath, owner: FieldOwner | None) -> str | None:
        """A configured ignore rule that matches, as its reason."""
        for rule in self.rules:
            if rule.applies(ref, owner) and any(match(p, path) for p in rule.patterns):
                return rule.reason
        return None

    def argo_reason(
        self, *, ref: ObjectRef, path: FieldPath, owner: FieldOwner | None, live: Any, git: Any, keys: KeyResolver
    ) -> str | None:
        """An Argo CD ``ignoreDifferences`` entry that matches, as a reason."""
        for e in self.argo:
            if not e.rule.applies(ref, None):
                continue
            if owner is not None and any(_glob(m, owner.manager) for m in e.managers):
                return f"Argo CD ignoreDifferences: managedFieldsManagers {owner.manager}"
            for tokens in e.pointers:
                target = _pointer_path(tokens, live, keys) or _pointer_path(tokens, git, keys)
                if target is not None and tuple(path[: len(target)]) == target:
                    return "Argo CD ignoreDifferences: jsonPointers /" + "/".join(tokens)
            for steps in e.jq:
                if _jq_match(steps, path, (live, git)):
                    return "Argo CD ignoreDifferences: jqPathExpressions"
        return None

    def preset_reason(self, *, path: FieldPath, op: Op) -> str | None:
        """A webhook preset that explains an added field, as a reason."""
        if op is not Op.ADD:
            return None
        for preset, patterns in self._preset_patterns:
            if any(match(p, path) for p in patterns) or _meta_prefix(path, preset):
                return f"injected by a mutating webhook ({preset.name} preset)"
        return None


def _meta_prefix(path: FieldPath, preset: Preset) -> bool:
    if len(path) < 3 or not isinstance(path[-1], Key) or path[-3] != Key("metadata"):
        return False
    key, kind = path[-1].name, path[-2]
    prefixes = preset.annotation_prefixes if kind == Key("annotations") else ()
    prefixes = preset.label_prefixes if kind == Key("labels") else prefixes
    return any(key.startswith(p) for p in prefixes)


def _pointer_tokens(pointer: str) -> tuple[str, ...] | None:
    if not pointer.startswith("/"):
        return None
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/"))


def _pointer_path(tokens: tuple[str, ...], body: Any, keys: KeyResolver) -> FieldPath | None:
    """A JSON pointer as a path; list positions become the item's key selector when the list is keyed."""
    out: list[Segment] = []
    node = body
    for t in tokens:
        if isinstance(node, list):
            if not t.isdigit() or int(t) >= len(node):
                return None
            names = keys(tuple(out))
            sel = item_selector(node[int(t)], names) if names else None
            out.append(sel or Index(int(t)))
            node = node[int(t)]
        elif isinstance(node, Mapping):
            out.append(Key(t))
            node = node.get(t)
        else:
            out.append(Key(t))
            node = None
    return tuple(out)


def build_ignores(
    *, rules: Sequence[IgnoreRule], presets: Sequence[str], argocd: Sequence[Mapping[str, Any]] = ()
) -> Ignores:
    """Compile configured rules, the enabled presets and Argo CD ``ignoreDifferences`` entries."""
    notes: list[str] = []
    compiled = tuple(
        _Rule(
            patterns=tuple(parse_pattern(p) for p in r.paths),
            reason=r.reason,
            kind=r.kind,
            group=r.group,
            name=r.name,
            namespace=r.namespace,
            managers=r.managers,
        )
        for r in rules
    )
    chosen: list[Preset] = []
    for name in presets:
        if name in PRESETS:
            chosen.append(PRESETS[name])
        else:
            notes.append(f"unknown webhook preset {name!r} (known: {', '.join(sorted(PRESETS))})")
    argo: list[_ArgoEntry] = []
    for i, entry in enumerate(argocd):
        argo.append(_argo_entry(entry, index=i, notes=notes))
    return Ignores(
        rules=compiled,
        presets=tuple(chosen),
        argo=tuple(argo),
        notes=tuple(notes),
        _preset_patterns=tuple((p, tuple(parse_pattern(x) for x in p.paths)) for p in chosen),
    )


def _argo_entry(entry: Mapping[str, Any], *, index: int, notes: list[str]) -> _ArgoEntry:
    where = f"Argo CD spec.ignoreDifferences[{index}]"
    pointers: list[tuple[str, ...]] = []
    for p in entry.get("jsonPointers") or ():
        tokens = _pointer_tokens(str(p))
        if tokens is None:
            notes.append(f"{where}: jsonPointer {p!r} does not start with '/': not used")
        else:
            pointers.append(tokens)
    jq: list[tuple[_JqStep, ...]] = []
    for expr in entry.get("jqPathExpressions") or ():
        steps = _jq_parse(str(expr))
        if steps is None:
            notes.append(f"{where}: jqPathExpression {expr!r} is not one of the supported simple forms: not used")
        else:
            jq.append(steps)
    # As Argo CD matches: group and kind are globs, a missing group is the core group "".
    rule = _Rule(
        patterns=(),
        reason="",
        kind=str(entry.get("kind") or "*"),
        group=str(entry.get("group") or ""),
        name=entry.get("name") or None,
        namespace=entry.get("namespace") or None,
    )
    return _ArgoEntry(
        rule=rule,
        pointers=tuple(pointers),
        jq=tuple(jq),
        managers=tuple(str(m) for m in entry.get("managedFieldsManagers") or ()),
    )


_FLUX_SSA = "kustomize.toolkit.fluxcd.io/ssa"
_FLUX_RECONCILE = "kustomize.toolkit.fluxcd.io/reconcile"


def flux_skip(*bodies: Any) -> str | None:
    """Flux does not enforce this object (``ssa: IfNotPresent|Ignore``, ``reconcile: disabled``): a reason."""
    for body in bodies:
        ann = get_at(body, (Key("metadata"), Key("annotations")))
        if not isinstance(ann, Mapping):
            continue
        ssa = str(ann.get(_FLUX_SSA, "")).lower()
        if ssa in ("ifnotpresent", "ignore"):
            return f"Flux does not enforce this object ({_FLUX_SSA}: {ann[_FLUX_SSA]})"
        if str(ann.get(_FLUX_RECONCILE, "")).lower() == "disabled":
            return f"Flux does not reconcile this object ({_FLUX_RECONCILE}: disabled)"
    return None
