"""Durable state for captured hotfixes: a directory outside the cluster, or a ConfigMap inside it.

A capture is one person's write: the object as the person left it (managedFields included), who wrote it, when,
at which resourceVersion, and the fields it changed, so a backport PR can still be opened after the GitOps
controller reverted the live object. An object has one capture per write (``Capture.key``). Never a Secret:
captures of Secrets are refused, and the state is never stored in one. Never a sensitive value either: the
capturer removes the fields at ``policy.sensitive_paths`` first and ``redacted`` names them (paths only).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

from writeback.adapters.kube.api_errors import api_error
from writeback.errors import InputError
from writeback.kube.refs import split_ns_name
from writeback.kube.wellknown import MANAGED_BY, WRITEBACK
from writeback.model import Capture

log = logging.getLogger(__name__)


class HotfixStore(Protocol):
    def save(self, capture: Capture) -> None: ...
    def load(self, *, target: str) -> list[Capture]: ...
    def discard(self, capture: Capture) -> None: ...


def _refuse_secrets(capture: Capture) -> None:
    if capture.ref.is_secret:
        raise InputError(f"{capture.ref}: Secrets are never captured into writeback's state")


class DirectoryStore:
    """One JSON file per capture under ``<state_dir>/hotfixes/``, written atomically, mode 0600.

    A save writes a temporary file, syncs it to disk and renames it over the capture: a process killed in the
    middle leaves the old capture whole (or none) and a ``.tmp-`` file, which ``load`` removes once it is stale."""

    STALE_TMP_SECONDS = 300.0  # older than any save in progress

    def __init__(self, *, state_dir: str | Path) -> None:
        self.root = Path(state_dir) / "hotfixes"

    def save(self, capture: Capture) -> None:
        _refuse_secrets(capture)
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(capture.to_json())
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.root / capture.key)
            self._sync_directory()
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _sync_directory(self) -> None:
        with contextlib.suppress(OSError):  # not every filesystem syncs a directory
            fd = os.open(self.root, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _remove_stale_tmp(self) -> None:
        """The temporary files of saves a killed process never finished."""
        now = time.time()
        for tmp in self.root.glob(".tmp-*"):
            with contextlib.suppress(OSError):
                if now - tmp.stat().st_mtime > self.STALE_TMP_SECONDS:
                    tmp.unlink()
                    log.info("removed %s, left by a save that did not finish", tmp)

    def load(self, *, target: str) -> list[Capture]:
        if not self.root.is_dir():
            return []
        self._remove_stale_tmp()
        out = []
        for path in sorted(self.root.glob("*.json")):
            try:
                capture = Capture.from_json(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, KeyError) as e:  # a foreign or damaged file: say so, keep the others
                log.warning("hotfix state %s is not a readable capture, skipped: %s: %s", path, type(e).__name__, e)
                continue
            if capture.target != target:
                continue
            if path.name != capture.key:  # stored under an older version's key (one per object): renamed
                self.save(capture)
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            out.append(capture)
        return out

    def discard(self, capture: Capture) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.root / capture.key).unlink()


class ConfigMapStore:
    """One data key per capture in a ConfigMap (``namespace/name``) in writeback's own namespace."""

    def __init__(self, *, api_client: Any, configmap: str) -> None:
        namespace, name = split_ns_name(configmap, what="state_configmap")
        self._api = api_client
        self.namespace, self.name = namespace, name

    def _core(self) -> Any:
        from kubernetes import client

        return client.CoreV1Api(self._api)

    def _data(self) -> dict[str, str]:
        from kubernetes.client.exceptions import ApiException

        try:
            cm = self._core().read_namespaced_config_map(name=self.name, namespace=self.namespace)
        except ApiException as e:
            if e.status == 404:
                return {}
            raise api_error(e, what=f"state ConfigMap {self.namespace}/{self.name}: read") from e
        return dict(cm.data or {})

    def _patch(self, data: dict[str, str | None]) -> None:
        from kubernetes.client.exceptions import ApiException

        core = self._core()
        body = {"data": data}
        try:
            core.patch_namespaced_config_map(name=self.name, namespace=self.namespace, body=body)
        except ApiException as e:
            if e.status != 404:
                raise api_error(e, what=f"state ConfigMap {self.namespace}/{self.name}: patch") from e
            created = {"metadata": {"name": self.name, "labels": {MANAGED_BY: WRITEBACK}}}
            created["data"] = {k: v for k, v in data.items() if v is not None}
            try:
                core.create_namespaced_config_map(namespace=self.namespace, body=created)
            except ApiException as e2:
                raise api_error(e2, what=f"state ConfigMap {self.namespace}/{self.name}: create") from e2

    def save(self, capture: Capture) -> None:
        _refuse_secrets(capture)
        self._patch({capture.key: capture.to_json()})

    def load(self, *, target: str) -> list[Capture]:
        out = []
        for key, text in sorted(self._data().items()):
            if not key.endswith(".json"):
                continue
            try:
                capture = Capture.from_json(text)
            except (ValueError, KeyError) as e:
                log.warning("hotfix state %s/%s key %s is not a readable capture, skipped: %s: %s",
                            self.namespace, self.name, key, type(e).__name__, e)  # fmt: skip
                continue
            if capture.target != target:
                continue
            if key != capture.key:  # stored under an older version's key (one per object): renamed
                self._patch({key: None, capture.key: capture.to_json()})
            out.append(capture)
        return out

    def discard(self, capture: Capture) -> None:
        self._patch({capture.key: None})
