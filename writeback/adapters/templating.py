"""Read the Jinja2 template texts: the packaged defaults, overridden file by file by a configured directory.

The defaults ship inside the package (``writeback/templates``; the repository's top-level ``templates/`` is
a symlink to it), so they load the same way from a checkout and from an installed wheel.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from writeback.errors import ConfigError

TEMPLATE_NAMES = ("commit_message.j2", "pr_title.j2", "pr_body.j2")


def load_templates(*, override_dir: str | None = None) -> dict[str, str]:
    """Template name -> text. A file in ``override_dir`` replaces the packaged one of the same name."""
    packaged = resources.files("writeback") / "templates"
    texts = {name: (packaged / name).read_text(encoding="utf-8") for name in TEMPLATE_NAMES}
    if override_dir is not None:
        directory = Path(override_dir)
        if not directory.is_dir():
            raise ConfigError(f"pull_request.templates_dir: {directory} is not a directory")
        for name in TEMPLATE_NAMES:
            path = directory / name
            if path.is_file():
                try:
                    texts[name] = path.read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError) as e:
                    raise ConfigError(f"pull_request.templates_dir: cannot read {path}: {e}") from e
    return texts
