"""Container image references: ``registry:5000/repo/app:1.2@sha256:...`` as name, tag and digest. Pure."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Image:
    name: str
    tag: str | None = None
    digest: str | None = None

    def __str__(self) -> str:
        out = self.name
        if self.tag:
            out += f":{self.tag}"
        if self.digest:
            out += f"@{self.digest}"
        return out

    def part(self, which: str) -> str | None:
        return {"name": self.name, "tag": self.tag, "digest": self.digest}[which]


def parse_image(text: str) -> Image:
    """``registry:5000/repo/app:1.2@sha256:...`` -> name, tag, digest."""
    rest, _, digest = text.partition("@")
    slash = rest.rfind("/")
    colon = rest.rfind(":")
    if colon > slash:
        return Image(name=rest[:colon], tag=rest[colon + 1 :] or None, digest=digest or None)
    return Image(name=rest, tag=None, digest=digest or None)


def image_registry(image: str) -> str:
    """The registry host of an image reference (``docker.io`` when none is named)."""
    first, sep, _ = image.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return "docker.io"
