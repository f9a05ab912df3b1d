"""Where a drifted field's value is produced in the repo, and how to write it there. Data only."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from writeback.kube.pathtypes import ABSENT, FieldPath
from writeback.model import Drift, Op, PlanProblem, Unresolved


class Transform(enum.StrEnum):
    """How the live value becomes the text written at a location."""

    VALUE = "value"  # the live value itself (or a removal when the drift removes)
    IMAGE_TAG = "tag"  # one part of the live image string
    IMAGE_NAME = "name"
    IMAGE_DIGEST = "digest"
    IMAGE_ENTRY = "images-entry"  # a kustomize images: entry; newName/newTag/digest as needed
    LITERAL = "literal"  # a generator literal ``KEY=value``; path is the generator entry
    ENV_LINE = "env-line"  # a ``KEY=value`` line of a generator env file (not YAML)
    FILE_CONTENT = "file-content"  # the whole text of a generator source file (not YAML)
    DELETE_DIRECTIVE = "delete-directive"  # strategic merge: ``key: null`` or a ``$patch: delete`` item


@dataclass(frozen=True, slots=True, kw_only=True)
class NewPatch:
    """A strategic-merge patch file to create in an overlay, and its reference in that kustomization."""

    kustomization: str  # the overlay's kustomization file
    file: str  # the new patch file, repo-relative
    reference: str  # as written under ``patches: - path:``
    text: str  # its initial text: apiVersion, kind and metadata of the patched resource


@dataclass(frozen=True, slots=True)
class Value:
    """A value to write that is not the drift's live value (``ABSENT``: remove the key): the part of a live field
    that one values key fills, for example."""

    value: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Location:
    drift: Drift
    file: str
    document: int  # the document of ``file`` (with ``inline``: the one that holds the embedded text)
    path: FieldPath  # in the document (with ``inline``: in the first document of the embedded text)
    transform: Transform = Transform.VALUE
    key: str | None = None  # LITERAL / ENV_LINE: the data key
    inline: FieldPath | None = None  # the path of a string that holds YAML text (an inline patch, a values text)
    new_patch: NewPatch | None = None
    value: Value | None = None  # VALUE / FILE_CONTENT: write this instead of the drift's live value
    via: str = ""  # for people: "overlay patch", "kustomize images entry", "marker at values.yaml:4", ...

    @property
    def written(self) -> Any:
        """What a VALUE location writes: its explicit value, else the live value (ABSENT when the drift removes)."""
        if self.value is not None:
            return self.value.value
        return ABSENT if self.drift.op is Op.REMOVE else self.drift.live


@dataclass(frozen=True, slots=True)
class NotFound:
    """Why a source cannot say where a drifted field is written (listed for reviewers, never guessed)."""

    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Located:
    """The result of locating a target's drifts."""

    locations: tuple[Location, ...] = ()
    unresolved: tuple[Unresolved, ...] = ()
    errors: tuple[PlanProblem, ...] = ()  # source problems that are not tied to one drift (file and line named)
