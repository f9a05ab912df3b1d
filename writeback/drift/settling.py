"""The engine's first stage: settle an object from its managers alone, without normalizing or comparing. Pure.

Most live objects were written only by their GitOps applier (a server-side Apply by ``argocd-controller``,
``kustomize-controller``, ...) and by controllers writing their status. Such an object holds what Git declares
(plus the server's defaults and the status), so it has no drift to report: :func:`settle` says so from its
``metadata.managedFields`` and Git's manifest, for a fraction of what normalizing and comparing cost. It settles an
object only when every one of these holds, and otherwise leaves it to the normal path (which decides exactly):

- the object records managedFields (a dump without them proves nothing);
- every entry is a GitOps manager's Apply to the object itself, or a controller's write to its ``status``
  subresource; at least one is an Apply. A person's write of any kind (an Update by ``kubectl-edit``, ``kubectl``,
  a dashboard; a ``/scale`` by a person) leaves an entry by its manager, and so does a controller's write to the
  object itself or to ``/scale``, whose fields the report lists as ignored: both take the normal path;
- Git's manifest did not change after every applier's last Apply (its time is later than the last commit that
  changed the object's source at the compared revision): an Apply older than the Git change holds an older
  manifest, whose difference is a pending or failed sync;
- the Git head, when it is ahead of the compared revision, declares the object as the compared revision does
  (commits the controller has not synced yet are ``pending`` in the normal path);
- the appliers own exactly what Git declares (bookkeeping labels and annotations aside), and what nobody owns is
  what the rules drop as defaults (``_only_defaults``: admission's additions record no manager, nor does a scale of
  replicas nobody owned);
- every field Git declares is owned by an applier's Apply. A field a person removed leaves no entry at all (the
  API server drops it from every manager's set, and records no remover: the real kube-apiserver keeps the person's
  ``kubectl edit`` entry only when it also set a field), so only this check sees a removal: the applier no longer
  owns a field its manifest sends.

A settled object is named in ``--explain`` with the rule ``settled-by-managers``; the report is otherwise what the
normal path makes of it: no drift.

With ``scale`` (:func:`settle`; the engine passes it without ``--explain``, whose dropped list must stay the normal
path's), one more kind of entry is allowed: a controller's write to the ``/scale`` subresource that owns exactly
``spec.replicas`` (``kube-controller-manager`` for an HPA, a KEDA ScaledObject's HPA, or a ``scale`` by a controller),
when Git declares ``spec.replicas`` and the appliers do not own it. Everything above holds for the rest of the object,
so its one possible difference is ``spec.replicas``, owned by that controller: :data:`SCALED`, and the engine decides
that one difference by the same rules as the normal path (``drift.engine``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from writeback.bodies import CompactBody
from writeback.drift.applied_fields import covers_object, merged
from writeback.drift.deciding import Role, manager_role
from writeback.drift.evidence.defaults import is_default_in
from writeback.drift.normalizing import SERVER_METADATA, added_annotation, added_label, allocated
from writeback.kube.pathtypes import Key
from writeback.kube.refs import Identity, ObjectRef
from writeback.model import DesiredObject, Explanation, LiveObject, Rule
from writeback.settings import Policy

__all__ = ["SCALED", "SETTLED", "GitChanges", "Settle", "compacted", "oldest_write", "replicas", "settle"]

_APPLY = "Apply"
_STATUS = "status"
_SCALE = "scale"
_REPLICAS_TREE: Mapping[str, Any] = {"f:spec": {"f:replicas": {}}}  # what a write through /scale owns
# Fields a manifest carries that managedFields never record: the object's type and identity.

SETTLED = Explanation(
    Rule.SETTLED_BY_MANAGERS,
    "settled by its managers, not compared: every write is its GitOps applier's Apply of Git's manifest (after "
    "Git's last change to it) or a controller's status",
)
SCALED = Explanation(
    Rule.SETTLED_BY_MANAGERS,
    "settled by its managers, not compared: every write is its GitOps applier's Apply of Git's manifest (after "
    "Git's last change to it), a controller's status, or a controller's write of spec.replicas through /scale",
)


@dataclass(frozen=True, slots=True, kw_only=True)
class GitChanges:
    """When Git last changed each compared object's source, up to the compared revision (seconds since the epoch).

    ``by_file``: the files (relative to the repo root) changed after ``since``, with their last change; a file not
    listed last changed before ``since``. ``rendered``: the objects are rendered from the whole tree (Kustomize,
    Helm), so the last change of any file counts for every object."""

    since: int
    by_file: Mapping[str, int] = field(default_factory=dict)
    rendered: bool = False

    def changed_at(self, file: str) -> int:
        if self.rendered:
            return max(self.by_file.values(), default=self.since - 1)
        return self.by_file.get(file, self.since - 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settle:
    """What the first stage needs beyond the two objects: when Git changed them, and the Git head's objects when the
    head is ahead of the compared revision (``head_given``; an object missing there is pending)."""

    changes: GitChanges
    head: Mapping[Identity, DesiredObject] = field(default_factory=dict)
    head_given: bool = False
    # each manager's role, looked up once per policy (the policy is kept with it, so its id stays its own)
    roles: dict[tuple[int, str], tuple[Policy, Role]] = field(default_factory=dict, compare=False, repr=False)

    def role(self, policy: Policy, manager: str) -> Role:
        key = (id(policy), manager)
        known = self.roles.get(key)
        if known is None:
            known = self.roles[key] = (policy, manager_role(policy, manager))
        return known[1]


def settle(
    live: LiveObject, desired: DesiredObject, *, policy: Policy, context: Settle, scale: bool = False
) -> Explanation | None:
    """:data:`SETTLED` when ``live`` is settled by its managers alone (module docstring); with ``scale``,
    :data:`SCALED` when a controller's ``/scale`` write owns ``spec.replicas`` besides (its value may differ from
    Git's: :func:`replicas`); else None."""
    meta = live.body.get("metadata")
    entries = meta.get("managedFields") if type(meta) is dict or isinstance(meta, Mapping) else None
    if type(entries) is not list or not entries:
        return None
    trees: list[Mapping[str, Any]] = []
    scaled = False
    changed = context.changes.changed_at(desired.file)
    for entry in entries:
        if type(entry) is not dict and not isinstance(entry, Mapping):
            return None
        if entry.get("fieldsType", "FieldsV1") != "FieldsV1":
            return None
        role = context.role(policy, str(entry.get("manager") or ""))
        subresource = entry.get("subresource") or ""
        if role is Role.CONTROLLER and subresource == _STATUS:
            continue
        if scale and role is Role.CONTROLLER and subresource == _SCALE and entry.get("fieldsV1") == _REPLICAS_TREE:
            scaled = True
            continue
        if role is not Role.GITOPS or subresource or entry.get("operation") != _APPLY:
            return None
        applied = _seconds(entry.get("time"))
        tree = entry.get("fieldsV1")
        if applied is None or applied <= changed or not isinstance(tree, Mapping):
            return None
        trees.append(tree)
    if not trees:
        return None
    if context.head_given:
        at_head = context.head.get(desired.ref.identity)
        if at_head is None or at_head.body != desired.body:
            return None
    owned = trees[0] if len(trees) == 1 else merged(trees)
    if scaled:  # the appliers own Git's fields but spec.replicas, which the /scale writes alone own
        if replicas(live.body, desired.body) is None or _replicas_owned(owned):
            return None
        owned = merged((owned, _REPLICAS_TREE))
    if not covers_object(owned, desired.body) or not _only_defaults(live.body, desired.body, "", desired.ref.kind, ()):
        return None
    return SCALED if scaled else SETTLED


def replicas(live: Mapping[str, Any], git: Mapping[str, Any]) -> tuple[int, int] | None:
    """``spec.replicas`` of live and of Git, when both are integers (what normalizing and diffing leave as they
    are), else None."""
    pair = (_spec(live).get("replicas"), _spec(git).get("replicas"))
    return pair if type(pair[0]) is int and type(pair[1]) is int else None  # type: ignore[return-value]


def _spec(body: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = body.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _replicas_owned(tree: Mapping[str, Any]) -> bool:
    spec = tree.get("f:spec")
    return spec == {} or (isinstance(spec, Mapping) and "f:replicas" in spec)


def oldest_write(live: Sequence[LiveObject]) -> int | None:
    """The oldest ``time`` of any managedFields entry of ``live`` (seconds since the epoch), None when none has one:
    a Git change before it is older than every Apply."""
    oldest: str | None = None
    for o in live:
        meta = o.body.get("metadata")
        entries = meta.get("managedFields") if isinstance(meta, Mapping) else None
        for e in entries if isinstance(entries, list) else ():
            t = e.get("time") if isinstance(e, Mapping) else None
            if isinstance(t, str) and t and (oldest is None or t < oldest):
                oldest = t  # RFC 3339 in UTC ("...Z") sorts as time does
    return _seconds(oldest)


def compacted(live: LiveObject, *, ref: ObjectRef | None = None) -> LiveObject:
    """``live`` without its body: apiVersion, kind and ``metadata``'s name, namespace, uid and resourceVersion (no
    managedFields, labels, spec or status: ``bodies.CompactBody``). For an object settled by its managers, whose
    preparation holds it: nothing later reads more of a settled object (it has no drift, so no change set,
    verification line or PR row names it). ``ref``: the same object's reference held anyway (Git's), kept instead
    of live's own when they are equal, with its name: one copy of each for both sides."""
    shared = ref if ref is not None and ref == live.ref else live.ref
    return LiveObject(ref=shared, body=CompactBody(live.body, name=shared.name), source=live.source)


def _only_defaults(live: Any, git: Any, name: str, kind: str, at: tuple[str, ...] | None) -> bool:
    """What live holds beyond Git, nobody having written it (the appliers own exactly Git's fields), is what the
    rules drop: the server's defaults (scalars, maps of them, a whole list the defaults table or normalizing knows),
    never an item, a label or an annotation (injected: the rules report them, bookkeeping aside), nor ``replicas``
    Git leaves out unless the table's default (a scale of replicas nobody owned records no manager: ``unowned``).
    ``name``: the field ``live`` is the value of; ``kind``: the object's; ``at``: the path of keys from the object's
    root (None inside a list item). Called for every object of a cycle: positional, its fields looked at inline."""
    if type(live) is dict and type(git) is dict:
        get = live.get
        for key, other in git.items():  # what both hold: only two maps or two lists that differ can hold more
            nested = type(other)
            if nested is dict or nested is list:
                value = get(key, _ABSENT)
                if (
                    type(value) is nested
                    and value != other
                    and not _only_defaults(value, other, key, kind, None if at is None else (*at, key))
                ):
                    return False
        if len(live) <= len(git) and live.keys() <= git.keys():
            return True
        alone = live.keys() - git.keys()  # what live alone holds
        if at is not None and len(at) < 2:  # never compared: the status, the server's metadata
            if not at:
                alone.discard("status")
            elif at[0] == "metadata":
                alone -= SERVER_METADATA
        if name == "labels":
            return all(added_label(key) is not None for key in alone)
        if name == "annotations":
            return all(added_annotation(key) is not None for key in alone)
        for key in alone:  # what Git leaves out
            value = live[key]
            if type(value) is dict:
                if not _only_defaults(value, _NOTHING, key, kind, None if at is None else (*at, key)):
                    return False
            elif (type(value) is list and value) or (key == "replicas" and at == _SPEC):
                # a scalar, an empty list: a default the rules drop; not a whole list, nor spec.replicas
                here = None if at is None else (*at, key)
                if here is None or not (allocated(kind, here) or _table_default(kind, here, value, live)):
                    return False
        return True
    if type(live) is list and type(git) is list:
        if len(live) != len(git):
            return False
        named = {i.get("name"): i for i in live if type(i) is dict and "name" in i}
        for pos, item in enumerate(git):
            match = named.get(item.get("name")) if type(item) is dict and "name" in item else live[pos]
            if match is None or (match != item and not _only_defaults(match, item, "", kind, None)):
                return False
        return True
    return True


_SPEC = ("spec",)
_NOTHING: dict[str, Any] = {}  # Git's side of a map it leaves out (read, never written)


def _table_default(kind: str, at: tuple[str, ...], value: Any, parent: Mapping[str, Any]) -> bool:
    return is_default_in(kind=kind, path=tuple(Key(n) for n in at), value=value, parent=lambda: parent)


_ABSENT: Any = object()


def _seconds(text: Any) -> int | None:
    if type(text) is not str or not text:
        return None
    return _parsed_seconds(text)


@functools.lru_cache(maxsize=4096)  # the times of one sync repeat across its objects
def _parsed_seconds(text: str) -> int | None:
    try:
        return int(datetime.fromisoformat(text).timestamp())
    except ValueError:
        return None
