"""Group a target's drifts into change sets and patch the repo texts for each. Pure.

One change set per target (and per app when a target spans several): writeback drifts go into a
``review: standard`` set, flag drifts into a separate ``review: security`` set. The ``id`` is a slug of the target
(and app), stable while the drift changes; the ``fingerprint`` hashes the canonical drift set (resource, path, op,
value) without time or manager, with an HMAC instead of the value for sensitive fields.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from writeback.errors import PatchError
from writeback.kube.paths import format_path, lookup
from writeback.kube.pathtypes import ABSENT
from writeback.kube.refs import Identity
from writeback.model import (
    REDACTED,
    ChangeSet,
    Decision,
    Drift,
    FilePatch,
    PlanProblem,
    ProblemKind,
    Review,
    Unresolved,
    keyed_digest,
)
from writeback.yaml.edit import VerifyError

from .applying import apply_locations
from .documents import documents, is_yaml
from .locations import Located, Location, Transform

__all__ = ["Plan", "aborted", "changeset_id", "fingerprint", "plan_changesets", "with_held_back"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    changesets: tuple[ChangeSet, ...] = ()
    errors: tuple[PlanProblem, ...] = ()  # aborted change sets and source problems, each naming its file


def _slug(text: str) -> str:
    return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9.]+", "-", text.lower())).strip("-.") or "x"


def changeset_id(*, target: str, app: str | None = None, review: Review = Review.STANDARD) -> str:
    parts = [_slug(target)] + ([_slug(app)] if app else []) + (["security"] if review is Review.SECURITY else [])
    return "-".join(parts)


def _canonical_value(drift: Drift, key: bytes | None) -> Any:
    value = drift.live
    if value is ABSENT:
        return None
    if drift.sensitive:
        # The engine's digest of the real value, made before it was redacted; else the same digest of a value
        # at hand (never of the placeholder). Without a key the value is left out.
        digest = drift.digest or (keyed_digest(key, value) if value != REDACTED else None)
        return digest or "sensitive (no fingerprint_key: the value is left out)"
    return value


def fingerprint(drifts: Iterable[Drift], *, key: bytes | None = None) -> str:
    """sha256 over the canonical drift set: resource identity, path, op and live value.

    A sensitive value counts only as an HMAC with ``key``; without a key it is left out entirely.
    """
    rows = sorted(
        json.dumps(
            [list(d.resource.identity), format_path(d.path), d.op.value, _canonical_value(d, key)],
            sort_keys=True,
            separators=(",", ":"),
            default=str,
        )
        for d in drifts
    )
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()


def _verify(texts: Mapping[str, str], before: Mapping[str, str], locations: Sequence[Location]) -> None:
    """Re-parse every touched YAML file and check the plain values landed where intended."""
    read = {
        path: documents(text, source=path) for path, text in texts.items() if before.get(path) != text and is_yaml(path)
    }
    for loc in locations:
        if loc.transform is not Transform.VALUE or loc.inline is not None or not is_yaml(loc.file):
            continue
        docs = read.get(loc.file) or documents(texts[loc.file], source=loc.file)
        got = lookup(docs[loc.document], loc.path)
        want = loc.written
        if got != want:
            raise VerifyError(
                f"{loc.file}: after patching, {format_path(loc.path)} in document {loc.document + 1} "
                f"reads {got!r}, not the intended {want!r}"
            )


def _build(
    *,
    cs_id: str,
    target: str,
    review: Review,
    drifts: Sequence[Drift],
    locations: Sequence[Location],
    unresolved: Sequence[Unresolved],
    ignored: Sequence[Drift],
    files: Mapping[str, str],
    key: bytes | None,
) -> tuple[ChangeSet, PlanProblem | None]:
    texts = dict(files)
    failed: list[Unresolved] = []
    applied: list[Location] = []
    outcomes = apply_locations(texts, locations)
    for loc, error in zip(locations, outcomes, strict=True):
        if isinstance(error, VerifyError):
            return _aborted(cs_id, target, review, drifts, unresolved, ignored, key), _abort(cs_id, error)
        if error is not None:
            failed.append(Unresolved(resource=loc.drift.resource, path=loc.drift.path, reason=f"{loc.file}: {error}"))
            continue
        applied.append(loc)
    try:
        _verify(texts, files, applied)
    except PatchError as e:
        return _aborted(cs_id, target, review, drifts, unresolved, ignored, key), _abort(cs_id, e)
    patches = tuple(
        FilePatch(path=p, before=files.get(p), after=texts[p]) for p in sorted(texts) if files.get(p) != texts[p]
    )
    cs = ChangeSet(
        id=cs_id,
        target=target,
        review=review,
        fingerprint=fingerprint(drifts, key=key),
        files=patches,
        drifts=tuple(drifts),
        unresolved=(*unresolved, *failed),
        ignored=tuple(ignored),
    )
    return cs, None


def _abort(cs_id: str, error: Exception) -> PlanProblem:
    return aborted(cs_id, str(error))


def aborted(cs_id: str, why: str) -> PlanProblem:
    """The problem of a change set that was not safe to write (it keeps its drifts, but no files)."""
    return PlanProblem(kind=ProblemKind.ABORTED, message=f"change set {cs_id} aborted: {why}", changeset=cs_id)


def _aborted(
    cs_id: str,
    target: str,
    review: Review,
    drifts: Sequence[Drift],
    unresolved: Sequence[Unresolved],
    ignored: Sequence[Drift],
    key: bytes | None,
) -> ChangeSet:
    return ChangeSet(
        id=cs_id,
        target=target,
        review=review,
        fingerprint=fingerprint(drifts, key=key),
        drifts=tuple(drifts),
        unresolved=tuple(unresolved),
        ignored=tuple(ignored),
    )


def _not_patched(drift: Drift) -> Unresolved:
    what = "created live and not declared in Git" if drift.decision is Decision.NEW else "declared in Git, missing live"
    return Unresolved(resource=drift.resource, path=None, reason=f"{drift.decision.value}: {what}; not patched")


def plan_changesets(
    *,
    target: str,
    files: Mapping[str, str],
    drifts: Sequence[Drift],
    located: Located,
    apps: Mapping[Identity, str] | None = None,
    fingerprint_key: bytes | None = None,
) -> Plan:
    """Change sets for one target. ``files``: repo-relative path -> text.

    ``apps`` maps resource identities to the app (GitOps Application / Kustomization) that deploys them; when the
    drifts span several apps, each app gets its own change sets (id ``<target>-<app>``).
    """
    groups = _groups(drifts, apps or {})
    if len(groups) == 1:
        return _plan_group(target=target, app=None, files=files, drifts=drifts, located=located, key=fingerprint_key)
    apps = apps or {}
    changesets: list[ChangeSet] = []
    errors: list[PlanProblem] = list(located.errors)
    for app, mine in groups:
        ids = {id(d) for d in mine}
        part = Located(
            locations=tuple(loc for loc in located.locations if id(loc.drift) in ids),
            unresolved=tuple(u for u in located.unresolved if apps.get(u.resource.identity) == app),
        )
        plan = _plan_group(target=target, app=app, files=files, drifts=mine, located=part, key=fingerprint_key)
        changesets += plan.changesets
        errors += plan.errors
    return Plan(changesets=tuple(changesets), errors=tuple(errors))


def _groups(drifts: Sequence[Drift], apps: Mapping[Identity, str]) -> list[tuple[str | None, Sequence[Drift]]]:
    """The drifts of each app's change sets: one group (no app) unless the drifts span several apps."""
    names = sorted({apps[d.resource.identity] for d in drifts if d.resource.identity in apps})
    if len(names) <= 1:
        return [(None, drifts)]
    return [(app, [d for d in drifts if apps.get(d.resource.identity) == app]) for app in [*names, None]]


def with_held_back(
    plan: Plan, *, target: str, drifts: Sequence[Drift], apps: Mapping[Identity, str] | None = None
) -> Plan | None:
    """``plan``, made by :func:`plan_changesets` from drifts whose written and whole-object ones are those of
    ``drifts`` (the same objects in the same apps), with the held-back drifts of ``drifts`` as its standard change
    sets' ``ignored``: what ``plan_changesets`` over ``drifts`` gives, without locating or patching again (held-back
    drifts are neither located nor patched). None when a change set cannot be matched to its app's group."""
    ignored: dict[str, tuple[Drift, ...]] = {}
    for app, mine in _groups(drifts, apps or {}):
        cs_id = changeset_id(target=target, app=app)
        if cs_id in ignored:
            return None
        ignored[cs_id] = tuple(d for d in mine if d.decision.held_back)
    out: list[ChangeSet] = []
    for cs in plan.changesets:
        if cs.review is Review.STANDARD:
            if cs.id not in ignored:
                return None
            cs = replace(cs, ignored=ignored[cs.id])
        out.append(cs)
    return Plan(changesets=tuple(out), errors=plan.errors)


def _plan_group(
    *,
    target: str,
    app: str | None,
    files: Mapping[str, str],
    drifts: Sequence[Drift],
    located: Located,
    key: bytes | None,
) -> Plan:
    errors: list[PlanProblem] = list(located.errors)
    out: list[ChangeSet] = []
    ignored = [d for d in drifts if d.decision.held_back]
    other = [_not_patched(d) for d in drifts if d.decision.whole_object]
    for review, decision in ((Review.STANDARD, Decision.WRITEBACK), (Review.SECURITY, Decision.FLAG)):
        mine = [d for d in drifts if d.decision is decision]
        ids = {id(d) for d in mine}
        locs = [loc for loc in located.locations if id(loc.drift) in ids]
        unresolved = [u for u in located.unresolved if _review_of(u, drifts) is review]
        if review is Review.STANDARD:
            unresolved += other
        if not mine and not unresolved:
            continue
        cs_id = changeset_id(target=target, app=app, review=review)
        cs, error = _build(
            cs_id=cs_id,
            target=target,
            review=review,
            drifts=mine,
            locations=locs,
            unresolved=unresolved,
            ignored=ignored if review is Review.STANDARD else (),
            files=files,
            key=key,
        )
        out.append(cs)
        if error:
            errors.append(error)
    return Plan(changesets=tuple(out), errors=tuple(errors))


def _review_of(u: Unresolved, drifts: Sequence[Drift]) -> Review:
    """An Unresolved goes with its drift's review; one not tied to a drift goes to the standard set."""
    for d in drifts:
        if d.resource.identity == u.resource.identity and d.path == u.path and d.decision is Decision.FLAG:
            return Review.SECURITY
    return Review.STANDARD
