"""The editor leaves no reference cycles behind: a one-shot command runs without Python's cyclic collector
(``cli.entrypoint``), so a cycle lives until the process ends. ruamel.yaml's loaders are cyclic; each text the
editor parsed kept its loader, its text and its node tree (a plan of 100 edited files: about 5 MB more peak)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

from tests.yamledit.test_editing import CONFIGMAP
from writeback.config_errors import yaml_positions
from writeback.kube.pathtypes import Key
from writeback.yaml.edit import Edit, apply_edits


@contextmanager
def collector_off() -> Iterator[list[object]]:
    """Yields what the cyclic collector finds to free of what the block made (filled in at its end), the collector
    off meanwhile."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    found: list[object] = []
    try:
        yield found
    finally:
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            found.extend(gc.garbage)
        finally:
            gc.garbage.clear()
            gc.set_debug(0)
            if was:
                gc.enable()


def ruamel_objects(objects: list[object]) -> list[str]:
    return sorted({type(o).__module__ + "." + type(o).__qualname__ for o in objects
                   if type(o).__module__.startswith("ruamel")})  # fmt: skip


def test_edits_leave_no_ruamel_loader_to_the_cyclic_collector() -> None:
    with collector_off() as garbage:
        edit_texts()
    assert ruamel_objects(garbage) == []


def edit_texts() -> None:
    for i in range(5):  # texts the editor has not parsed before (its parse cache holds the last 16)
        text = CONFIGMAP.replace("trust", f"trust-{i}")
        edits = [
            Edit(document=0, path=(Key("data"), Key("ca.crt")), value="-----BEGIN CERTIFICATE-----\nMIIBnew\n"),
            Edit(document=0, path=(Key("data"), Key("other")), value="yes"),
            Edit(document=0, path=(Key("data"), Key("extra")), value="a: b"),
        ]
        after = apply_edits(text, edits, source=f"f{i}.yaml")
        assert "MIIBnew" in after and "trust-" in after
    assert yaml_positions(CONFIGMAP)(("data", "other")) == (11, 3)
