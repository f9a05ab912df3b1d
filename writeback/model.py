"""Small frozen data types that flow through the pipeline.

snapshot -> normalize -> attribute owners -> diff -> decide -> locate -> patch -> commit -> ensure PR.

Nothing here does I/O. Every type is a frozen dataclass with keyword-only fields.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# The decision vocabulary lives in writeback.decisions; it is re-exported here with the types that carry it.
from writeback.bodies import PackedBody, ReleasedBody
from writeback.decisions import Decision as Decision
from writeback.decisions import Explanation as Explanation
from writeback.decisions import Rule as Rule
from writeback.kube.pathtypes import ABSENT, FieldPath
from writeback.kube.refs import ObjectRef


class Source(enum.StrEnum):
    CLUSTER = "cluster"
    FILE = "file"


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveObject:
    ref: ObjectRef
    body: Mapping[str, Any]
    source: Source = Source.CLUSTER


@dataclass(frozen=True, slots=True, kw_only=True)
class DesiredObject:
    """A document in the Git repo that declares a resource."""

    ref: ObjectRef
    body: Mapping[str, Any]
    file: str  # path relative to the repo root
    document: int = 0  # index of the YAML document in the file (after List expansion: see item)
    item: int | None = None  # index inside a List kind's items, if any

    def unpacked(self) -> DesiredObject:
        """This object with its body as a plain mapping (itself when it is one): see :class:`PackedBody`."""
        if type(self.body) is not PackedBody:
            return self
        return DesiredObject(ref=self.ref, body=self.body.unpack(), file=self.file, document=self.document,
                             item=self.item)  # fmt: skip

    def released(self) -> DesiredObject:
        """This object without its body (:class:`ReleasedBody`): what a one-shot run keeps of an object its managers
        settled (``pipeline.settled``), whose body nothing reads again."""
        return DesiredObject(ref=self.ref, body=ReleasedBody(self.ref), file=self.file, document=self.document,
                             item=self.item)  # fmt: skip


# ---------------------------------------------------------------- dry-run evidence


class DryRunKind(enum.StrEnum):
    """How the API server was asked what it makes of a Git manifest."""

    # A dry-run create of the Git manifest alone, under a twin name: defaulting and admission run with no live
    # object and no live ownership, so a field it holds was filled in by the server, whoever owns it live.
    CREATE = "create"
    # A server-side-apply dry-run onto the live object (the fallback when a twin cannot be created): it keeps every
    # field another manager owns, so it proves the server's spelling of Git's values, never a default.
    APPLY = "apply"


@dataclass(frozen=True, slots=True, kw_only=True)
class DryRun:
    """What the API server returned for one dry-run of a Git manifest."""

    kind: DryRunKind
    body: Mapping[str, Any]


# ---------------------------------------------------------------- ownership


class ManagerOperation(enum.StrEnum):
    """How a field manager wrote, as its managedFields entry records it."""

    APPLY = "Apply"  # server-side apply
    UPDATE = "Update"  # any other write (create, update, patch, client-side apply)
    UNKNOWN = ""  # the entry records none (or one the API does not define)

    @classmethod
    def of(cls, value: object) -> ManagerOperation:
        """The operation of an entry's ``operation`` field (UNKNOWN when it is missing or unknown)."""
        try:
            return cls(str(value or ""))
        except ValueError:
            return cls.UNKNOWN


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldOwner:
    manager: str
    operation: ManagerOperation
    subresource: str = ""
    time: str | None = None


# ---------------------------------------------------------------- drift


class Side(enum.StrEnum):
    """The object a field was read from: the live one, or Git's."""

    LIVE = "live"
    GIT = "git"


class Op(enum.StrEnum):
    """The edit that Git needs to match live."""

    ADD = "add"
    CHANGE = "change"
    REMOVE = "remove"


# Stands in for a sensitive value wherever a drift is kept or shown: the value never leaves the process.
REDACTED = "changed (value redacted)"


def keyed_digest(key: bytes | None, value: Any) -> str | None:
    """The one digest of a sensitive value: HMAC-SHA256 with the configured key over its canonical JSON.

    It is all of the value that may count anywhere (a change set's fingerprint). None without a key (an unkeyed
    hash in a public PR would let anyone test guesses of the value offline) and for an absent value.
    """
    if not key or value is ABSENT:
        return None
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return "hmac-sha256:" + hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Drift:
    resource: ObjectRef
    path: FieldPath
    op: Op
    live: Any = ABSENT
    git: Any = ABSENT
    manager: str | None = None
    operation: ManagerOperation | None = None
    time: str | None = None
    decision: Decision = Decision.WRITEBACK
    reason: str = ""
    rule: Rule | None = None  # the rule that decided it (``reason`` is its text, with what the engine adds)
    sensitive: bool = False  # value redacted: never leaves the process
    digest: str | None = None  # sensitive only: ``keyed_digest`` of the live value before it was redacted


@dataclass(frozen=True, slots=True, kw_only=True)
class Dropped:
    """A field normalization removed before diffing, with the rule that removed it."""

    resource: ObjectRef
    path: FieldPath
    rule: str
    side: Side = Side.LIVE


# ---------------------------------------------------------------- patching


class Review(enum.StrEnum):
    STANDARD = "standard"
    SECURITY = "security"


@dataclass(frozen=True, slots=True, kw_only=True)
class FilePatch:
    path: str  # relative to the repo root, "/" separated
    before: str | None  # None: the file is new
    after: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Unresolved:
    resource: ObjectRef
    path: FieldPath | None
    reason: str


class ProblemKind(enum.StrEnum):
    """What a plan problem means for the command: its exit code and whether stale PRs may be retired."""

    UNUSABLE_SOURCE = "unusable-source"  # a source file or marker that cannot be used: bad input (exit 2)
    ABORTED = "aborted"  # a change set not safe to write (verification refused it): a run-time failure (exit 3)


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanProblem:
    """A problem of planning that is not tied to one drift; ``message`` names the file (and the change set)."""

    kind: ProblemKind
    message: str
    changeset: str | None = None

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True, slots=True, kw_only=True)
class ChangeSet:
    id: str
    target: str
    review: Review
    fingerprint: str
    files: tuple[FilePatch, ...] = ()
    drifts: tuple[Drift, ...] = ()
    unresolved: tuple[Unresolved, ...] = ()
    ignored: tuple[Drift, ...] = ()  # what was deliberately not written back (for the PR body)


class HotfixState(enum.StrEnum):
    """What became of one captured write (one person's write, seen by the watch)."""

    REVERTED = "reverted"  # the GitOps controller wrote over it: the PR carries it, from the capture
    REPLACED = "replaced"  # a later write by a person changed the same fields again: dropped
    IN_GIT = "in-git"  # Git carries its change now: dropped


@dataclass(frozen=True, slots=True, kw_only=True)
class CapturedHotfix:
    """A person's live write that the watch captured: reverted by the GitOps controller (the PR carries it), or
    dropped (``state``) because a later write by a person replaced it or Git carries it."""

    resource: ObjectRef
    manager: str  # who made the change (managedFields manager)
    time: str | None  # when they made it
    reverted_at: str | None = None  # when the controller wrote over it
    reverted_by: str | None = None  # the controller's manager
    operation: str = ""
    fields: tuple[FieldPath, ...] = ()  # REVERTED: the fields of its own change that the PR carries from it
    state: HotfixState = HotfixState.REVERTED
    replaced_by: str | None = None  # REPLACED: the later write's manager
    replaced_at: str | None = None  # ... and its time


# ---------------------------------------------------------------- hotfix capture

_UNSAFE_IN_KEY = re.compile(r"[^A-Za-z0-9._-]")
_MAX_KEY = 240


@dataclass(frozen=True, slots=True, kw_only=True)
class Capture:
    """A person's write seen by the watch, kept (``writeback.adapters.hotfix_store``) until it is backported.

    ``key`` names it in the store (a file, a ConfigMap key); ``to_json``/``from_json`` are its stored form.
    """

    target: str
    ref: ObjectRef
    manager: str
    operation: ManagerOperation
    time: str | None  # the managedFields time of the person's write
    captured_at: str  # when writeback saw it (UTC, RFC 3339)
    body: Mapping[str, Any]  # the object as the person left it, without its sensitive fields
    redacted: tuple[str, ...] = ()  # the sensitive paths removed from ``body`` (no values)
    redacted_last_applied: tuple[str, ...] = ()  # ... and from its last-applied-configuration annotation
    resource_version: str = ""  # of the object right after the write: two writes in one second differ by it
    # The write's own change: the fields (paths) that differ from the version just before it, as the watch saw
    # both; None when that version was not seen (the fields the person's managedFields entry owns stand in).
    changed: tuple[str, ...] | None = None
    in_git: bool = False  # Git carries its change (kept only to say so while the object's other captures live)

    @property
    def key(self) -> str:
        """One name per write: the object, then the manager, the time and the resourceVersion."""
        ref = self.ref
        parts = (self.target, ref.group or "core", ref.kind, ref.namespace or "_", ref.name)
        write = (self.manager, self.time or "-", self.resource_version or "-")
        name = "__".join(_UNSAFE_IN_KEY.sub("-", p) for p in (*parts, *write))
        if len(name) > _MAX_KEY:  # a ConfigMap key has at most 253 characters
            name = name[: _MAX_KEY - 17] + "-" + hashlib.sha256(name.encode()).hexdigest()[:16]
        return name + ".json"

    @property
    def order(self) -> tuple[str, int, str]:
        """Writes in the order they happened: by time, then resourceVersion (etcd's revision), then capture."""
        rv = self.resource_version
        return (self.time or "", int(rv) if rv.isdigit() else 0, self.captured_at)

    def to_json(self) -> str:
        doc = {
            "target": self.target,
            "ref": self.ref.as_json(),
            "manager": self.manager,
            "operation": self.operation,
            "time": self.time,
            "captured_at": self.captured_at,
            "object": self.body,
            "redacted": list(self.redacted),
            "redacted_last_applied": list(self.redacted_last_applied),
            "resourceVersion": self.resource_version,
            "changed": None if self.changed is None else list(self.changed),
            "in_git": self.in_git,
        }
        return json.dumps(doc, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Capture:
        doc = json.loads(text)
        return cls(
            target=doc["target"],
            ref=ObjectRef.from_json(doc["ref"]),
            manager=doc["manager"],
            operation=ManagerOperation.of(doc.get("operation")),
            time=doc.get("time"),
            captured_at=doc["captured_at"],
            body=doc["object"],
            redacted=tuple(str(p) for p in doc.get("redacted") or ()),
            redacted_last_applied=tuple(str(p) for p in doc.get("redacted_last_applied") or ()),
            resource_version=str(doc.get("resourceVersion") or ""),
            changed=None if doc.get("changed") is None else tuple(str(p) for p in doc["changed"]),
            in_git=bool(doc.get("in_git", False)),
        )


# ---------------------------------------------------------------- forge


class Outcome(enum.StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    CLOSED = "closed"
    SKIPPED = "skipped"
    FAILED = "failed"  # a hard error for this target or change set; the others still ran


@dataclass(frozen=True, slots=True, kw_only=True)
class PullRequestSpec:
    branch: str
    base: str
    title: str
    body: str
    fingerprint: str
    changeset_id: str
    labels: tuple[str, ...] = ()
    reviewers: tuple[str, ...] = ()
    assignees: tuple[str, ...] = ()
    draft: bool = False


class ResultReason(enum.StrEnum):
    """Why a result is what it is, where callers act on it (exit codes, metrics, output)."""

    BAD_INPUT = "bad-input"  # FAILED on a config, flag, file or resource that cannot be used (exit 2, not 3)
    RATE_LIMITED = "rate-limited"  # SKIPPED: the forge asked to wait longer than allowed; the next cycle retries
    PERSON_COMMITTED = "person-committed"  # SKIPPED: a person committed to the bot branch; it is left alone
    PERSISTENT_DRIFT = "persistent-drift"  # SKIPPED: merged, yet the same drift is live again
    CONCURRENT_WRITER = "concurrent-writer"  # SKIPPED: another writer changed the bot branch while this one pushed


@dataclass(frozen=True, slots=True, kw_only=True)
class EnsureResult:
    outcome: Outcome
    target: str
    changeset_id: str = ""
    url: str | None = None
    detail: str = ""
    pr: int | None = None  # the pull/merge request's number
    head: str | None = None  # the commit the bot pushed
    reason: ResultReason | None = None
