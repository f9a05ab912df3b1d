"""Render a change set into a commit message, a PR title and a PR body (Jinja2, pure).

Template text comes in as strings (``templates``: name -> text); reading files is an adapter's job.
The fingerprint marker is put at the very top of the body by code, never by a template, so that
cutting a body over the platform's limit never loses it. Sensitive values are redacted before any
template sees them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jinja2
import jinja2.meta
import jinja2.sandbox

from writeback.errors import ConfigError
from writeback.kube.paths import format_path
from writeback.kube.pathtypes import FieldPath, Index, Key, Select
from writeback.kube.refs import ObjectRef
from writeback.model import (
    CapturedHotfix,
    ChangeSet,
    Decision,
    Drift,
    HotfixState,
    ManagerOperation,
    Op,
    Review,
    Unresolved,
)
from writeback.pr.markdown import (
    REDACTED,
    code,
    escape_cell,
    escape_inline,
    format_value,
    is_long,
    path_cell,
    value_diff,
)
from writeback.pr.markers import comment_marker, format_marker


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderInput:
    change_set: ChangeSet
    cluster: str
    base: str
    request_name: str = "pull request"  # what the forge calls it ("merge request" on GitLab)
    body_limit: int = 65536  # the longest body the forge accepts
    incident: str | None = None
    verification: str | None = None  # the server-side dry-run apply result, one line
    security_labels: tuple[str, ...] = ()
    hotfixes: tuple[CapturedHotfix, ...] = ()  # captured live changes the GitOps controller reverted


@dataclass(frozen=True, slots=True, kw_only=True)
class Rendered:
    title: str
    body: str
    commit_message: str
    reverted_key: str | None = None  # names the reverted hotfixes the body reports (its hidden marker), if any


_MAPS = ("data", "binaryData", "stringData", "labels", "annotations")  # maps whose keys name the field
_VERBS = {Op.ADD: "added", Op.CHANGE: "changed", Op.REMOVE: "removed"}


def _item(select: Select) -> str:
    return ",".join(value for _, value in select.keys)


def field_label(path: FieldPath) -> str:
    """A field as a reviewer names it: ``env PAYMENT_TIMEOUT_MS``, ``containers app image``, ``data ca.crt``,
    ``replicas``, ``args[3]``."""
    if not path:
        return "(whole object)"
    last, before = path[-1], path[:-1]
    parent = before[-1] if before else None
    if isinstance(last, Select):
        return f"{parent.name} {_item(last)}" if isinstance(parent, Key) else _item(last)
    if isinstance(last, Index):
        return f"{parent.name}[{last.index}]" if isinstance(parent, Key) else f"[{last.index}]"
    if isinstance(parent, Select):
        return f"{field_label(before)} {last.name}"
    if isinstance(parent, Key) and parent.name in _MAPS:
        return f"{parent.name} {last.name}"
    return last.name


def _single(cs: ChangeSet) -> dict[str, str] | None:
    """The one change of a change set that has exactly one (for its title), else None."""
    if len(cs.drifts) != 1 or cs.drifts[0].decision.whole_object:
        return None
    d = cs.drifts[0]
    return {"resource": d.resource.ns_name, "field": field_label(d.path), "verb": _VERBS.get(d.op, str(d.op))}


def _who(row: Mapping[str, Any]) -> str:
    """Who changed a field: the manager and how (``kubectl-edit`` (Update)); ``when`` says when."""
    if not row.get("manager"):
        return "_unknown_"
    operation = f" ({escape_cell(row['operation'])})" if row.get("operation") else ""
    return code(row["manager"]) + operation


def _when(row: Mapping[str, Any]) -> str:
    """When a field was changed: its managedFields time, as the API server wrote it."""
    return escape_cell(row["time"]) if row.get("time") else "_unknown_"


def environment(templates: Mapping[str, str]) -> jinja2.Environment:
    """A sandboxed environment: a configured template reaches no attribute or method outside the sandbox's rules
    (``__class__``, ``mro``, ...), whoever wrote it."""
    env = jinja2.sandbox.SandboxedEnvironment(
        loader=jinja2.DictLoader(dict(templates)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(md=escape_inline, cell=escape_cell, value=format_value, who=_who, when=_when, code=code,
                       path=path_cell, value_diff=value_diff)  # fmt: skip
    return env


def _related(a: FieldPath, b: FieldPath) -> bool:
    """One path is the other or lies under it."""
    n = min(len(a), len(b))
    return tuple(a[:n]) == tuple(b[:n])


def _writer(d: Drift, hotfixes: Sequence[CapturedHotfix]) -> tuple[str | None, str | None, str | None]:
    """Who changed the field: the latest captured write the PR carries it from (a revert of an atomic list gives
    the last write all of it in managedFields), else the owner the drift engine found."""
    mine = [h for h in hotfixes if h.state is HotfixState.REVERTED and h.resource.identity == d.resource.identity
            and any(_related(p, d.path) for p in h.fields)]  # fmt: skip
    if not mine:
        return d.manager, d.operation, d.time
    h = max(mine, key=lambda h: h.time or "")
    return h.manager, h.operation or d.operation, h.time


def _row(d: Drift, hotfixes: Sequence[CapturedHotfix] = ()) -> dict[str, Any]:
    manager, operation, time = _writer(d, hotfixes)
    return {
        "path": format_path(d.path),
        "op": str(d.op),
        "git": REDACTED if d.sensitive else d.git,
        "live": REDACTED if d.sensitive else d.live,
        "manager": manager,
        "operation": operation,
        "time": time,
        "decision": str(d.decision),
        "reason": d.reason,
        "long": not d.sensitive and (is_long(d.git) or is_long(d.live)),
    }


def context(data: RenderInput) -> dict[str, Any]:
    """The variables every template sees."""
    cs = data.change_set
    resources: dict[str, dict[str, Any]] = {}
    created, deleted = [], []
    for d in cs.drifts:
        if d.decision is Decision.NEW:
            created.append({"ref": str(d.resource), "reason": d.reason})
        elif d.decision is Decision.DELETED:
            deleted.append({"ref": str(d.resource), "reason": d.reason})
        else:
            row = _row(d, data.hotfixes)
            resources.setdefault(str(d.resource), {"ref": str(d.resource), "rows": []})["rows"].append(row)
    not_written = [
        {"ref": str(d.resource), "path": format_path(d.path), "reason": d.reason or str(d.decision)} for d in cs.ignored
    ] + [
        {"ref": str(u.resource), "path": format_path(u.path) if u.path else "(whole resource)", "reason": u.reason}
        for u in cs.unresolved
    ]
    return {
        "target": cs.target,
        "single": _single(cs),
        "cluster": data.cluster,
        "base": data.base,
        "changeset_id": cs.id,
        "fingerprint": cs.fingerprint,
        "security": cs.review is Review.SECURITY,
        "security_labels": list(data.security_labels),
        "pr_word": data.request_name,
        "resources": list(resources.values()),
        "n_resources": len(resources) + len(created) + len(deleted),
        "n_fields": sum(len(r["rows"]) for r in resources.values()),
        "created": created,
        "deleted": deleted,
        "not_written": not_written,
        "incident": data.incident,
        "verification": data.verification,
        "files": [f.path for f in cs.files],
        "reverted_hotfixes": _reverted(data),
        "dropped_hotfixes": _dropped(data),
    }


def reverted_for(cs: ChangeSet, hotfixes: Sequence[CapturedHotfix]) -> tuple[CapturedHotfix, ...]:
    """The captured hotfixes of this change set's resources that the controller reverted in the cluster."""
    mine = {d.resource.identity for d in cs.drifts}
    return tuple(h for h in hotfixes if h.resource.identity in mine and h.state is HotfixState.REVERTED)


def dropped_for(cs: ChangeSet, hotfixes: Sequence[CapturedHotfix]) -> tuple[CapturedHotfix, ...]:
    """The captured writes to this change set's resources that it does not carry: replaced by a later write of a
    person, or in Git already."""
    mine = {d.resource.identity for d in cs.drifts}
    return tuple(h for h in hotfixes if h.resource.identity in mine and h.state is not HotfixState.REVERTED)


def reverted_key(hotfixes: Sequence[CapturedHotfix]) -> str | None:
    """A short stable name for a set of reverted hotfixes (who changed what, when; not when it was reverted)."""
    if not hotfixes:
        return None
    facts = sorted(f"{h.resource.identity}|{h.manager}|{h.time or ''}" for h in hotfixes)
    return hashlib.sha256("\n".join(facts).encode()).hexdigest()[:16]


def _reverted(data: RenderInput) -> list[dict[str, Any]]:
    return [
        {"ref": str(h.resource), "manager": h.manager, "time": h.time, "reverted_at": h.reverted_at,
         "reverted_by": h.reverted_by, "fields": [format_path(p) for p in h.fields]}
        for h in sorted(reverted_for(data.change_set, data.hotfixes), key=lambda h: h.time or "")
    ]  # fmt: skip


def _dropped(data: RenderInput) -> list[dict[str, Any]]:
    return [
        {"ref": str(h.resource), "manager": h.manager, "time": h.time, "state": str(h.state),
         "replaced_by": h.replaced_by, "replaced_at": h.replaced_at}
        for h in sorted(dropped_for(data.change_set, data.hotfixes), key=lambda h: h.time or "")
    ]  # fmt: skip


def cut_body(body: str, *, limit: int) -> str:
    """Cut a body to ``limit`` characters, with a note; the marker sits at the top and survives."""
    if len(body) <= limit:
        return body
    note = (
        f"\n\n---\n_This description was cut at {limit} characters, the platform's limit."
        " The full change is in the branch._\n"
    )
    head = body[: max(0, limit - len(note))]
    cut_at = head.rfind("\n")
    return (head[:cut_at] if cut_at > 0 else head) + note


def _sample() -> RenderInput:
    """A change set with a row of every kind, to render templates once before any real PR."""
    ref = ObjectRef(api_version="apps/v1", kind="Deployment", namespace="ns", name="sample")
    drift = Drift(resource=ref, path=(Key("spec"), Key("replicas")), op=Op.CHANGE, live=3, git=2,
                  manager="kubectl-edit", operation=ManagerOperation.UPDATE, time="2026-01-01T00:00:00Z",
                  reason="x")  # fmt: skip
    new = Drift(resource=ref, path=(), op=Op.ADD, decision=Decision.NEW, reason="new")
    gone = Drift(resource=ref, path=(), op=Op.REMOVE, decision=Decision.DELETED, reason="deleted")
    ignored = Drift(resource=ref, path=(Key("status"),), op=Op.CHANGE, decision=Decision.IGNORE, reason="ignored")
    cs = ChangeSet(id="sample", target="sample", review=Review.SECURITY, fingerprint="0" * 16,
                   drifts=(drift, new, gone), ignored=(ignored,),
                   unresolved=(Unresolved(resource=ref, path=None, reason="unresolved"),))  # fmt: skip
    hotfix = CapturedHotfix(resource=ref, manager="kubectl-edit", time="t", reverted_at="t", reverted_by="argocd",
                            fields=(drift.path,))  # fmt: skip
    replaced = CapturedHotfix(resource=ref, manager="kubectl-patch", time="s", state=HotfixState.REPLACED,
                              replaced_by="kubectl-edit", replaced_at="t")  # fmt: skip
    in_git = CapturedHotfix(resource=ref, manager="kubectl-set", time="r", state=HotfixState.IN_GIT)
    return RenderInput(change_set=cs, cluster="c", base="main", incident="INC-1", verification="ok",
                       security_labels=("security-review",), hotfixes=(hotfix, replaced, in_git))  # fmt: skip


def check_templates(templates: Mapping[str, str], *, where: str) -> None:
    """Fail now, not at PR time: a syntax error, a variable no template is given, or a render that fails on a
    sample change set raises ConfigError naming ``where`` and the template."""
    env = environment(templates)
    known = set(context(_sample()))
    for name in sorted(templates):
        try:
            ast = env.parse(templates[name], name=name)
        except jinja2.TemplateSyntaxError as e:
            raise ConfigError(f"{where}: {name}:{e.lineno}: template syntax error: {e.message}") from e
        unknown = sorted(jinja2.meta.find_undeclared_variables(ast) - known - set(env.globals))
        if unknown:
            raise ConfigError(
                f"{where}: {name}: undefined variable(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
            )
    try:
        render(templates=templates, data=_sample())
    except ConfigError as e:
        raise ConfigError(f"{where}: {e}") from e


def render(*, templates: Mapping[str, str], data: RenderInput) -> Rendered:
    """Render the three templates; the title is one line, the body starts with the fingerprint marker."""
    env = environment(templates)
    ctx = context(data)
    try:
        title = " ".join(env.get_template("pr_title.j2").render(ctx).split())
        body = env.get_template("pr_body.j2").render(ctx).strip() + "\n"
        message = env.get_template("commit_message.j2").render(ctx).strip() + "\n"
    except jinja2.TemplateError as e:
        where = f"{e.name}:{e.lineno}" if isinstance(e, jinja2.TemplateSyntaxError) else "a template"
        raise ConfigError(f"cannot render {where}: {e}") from e
    marker = format_marker(fingerprint=data.change_set.fingerprint, changeset_id=data.change_set.id)
    key = reverted_key(reverted_for(data.change_set, data.hotfixes))
    if key is not None:  # the publisher sees from it that an open PR already reports these reverts
        marker += "\n" + comment_marker("reverted", key)
    body = cut_body(f"{marker}\n{body}", limit=data.body_limit)
    return Rendered(title=title, body=body, commit_message=message, reverted_key=key)
