"""A one-shot plan locates drifts in the files detection parsed without parsing them all again (issue 23): it keeps
the names each parsed file declares (``yaml.reading.parse_scope``'s summary) and parses again only the files that
declare a drifted object's name. Where each drift lands, and every refusal, is what a full read finds."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import yaml

from tests.planning.repos import drift, ref
from writeback.pipeline.planning import PlanOutcome, plan_target
from writeback.pipeline.targets import Edges, TargetSpec
from writeback.sources.documents import declared_names
from writeback.sources.locating import locate
from writeback.sources.locations import Located
from writeback.sources.registry import by_name
from writeback.yaml import reading as yamlreading
from writeback.yaml.reading import YamlError, load_all


def manifest(kind: str, name: str, *, namespace: str = "prod", api: str = "v1") -> str:
    return f"apiVersion: {api}\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: {namespace}\ndata:\n  k: v\n"


FILES = {
    "apps/web.yaml": manifest("ConfigMap", "web") + "---\n" + manifest("Service", "web"),
    "apps/list.yaml": "apiVersion: v1\nkind: List\nitems:\n  - "
    + manifest("ConfigMap", "listed").replace("\n", "\n    "),
    "apps/twice-a.yaml": manifest("ConfigMap", "twice"),
    "apps/twice-b.yaml": manifest("ConfigMap", "twice"),
    "apps/quoted.yaml": manifest("ConfigMap", '"esc\\x61ped"'),  # the name is "escaped": not in the text as such
    "apps/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: [\n",
    **{f"apps/other-{i}.yaml": manifest("ConfigMap", f"other-{i}") for i in range(20)},
}
DRIFTS = [drift(ref("ConfigMap", name, api_version="v1"), "data.k", live="w", git="v")
          for name in ("web", "listed", "twice", "escaped", "ghost")]  # fmt: skip


@pytest.fixture
def one_shot() -> Iterator[None]:
    yamlreading.clear_cache()
    yamlreading.set_cache(enabled=False)
    try:
        yield
    finally:
        yamlreading.set_cache(enabled=True)
        yamlreading.clear_cache()


def located(files: Mapping[str, str]) -> Located:
    return locate(files=files, root="apps", source=by_name("plain"), drifts=DRIFTS)


def summary(result: Located) -> list[tuple[str, str, int, str]]:
    found = [(loc.drift.resource.name, loc.file, loc.document, str(loc.path)) for loc in result.locations]
    return sorted(found) + sorted((u.resource.name, u.reason, 0, "") for u in result.unresolved)


def test_locating_in_a_summary_scope_parses_only_the_files_naming_a_drift_and_finds_what_a_full_read_finds(
    one_shot: None,
) -> None:
    full = located(FILES)
    assert yamlreading.cache_info().misses == len(FILES)  # no scope: every file parsed
    with yamlreading.parse_scope(summary=declared_names):
        for file, text in FILES.items():  # what detection reads
            with contextlib.suppress(YamlError):
                load_all(text, source=file)
        before = yamlreading.cache_info().misses
        scoped = located(FILES)
        parsed_again = yamlreading.cache_info().misses - before
    assert summary(scoped) == summary(full)
    # web, listed, the two twice files, the escaped name's file (not in its text as written: the kept names are the
    # parsed ones) and the broken file (nothing kept of it: read again for its error); not the 20 of other names
    assert parsed_again == 6
    reasons = {u.resource.name: u.reason for u in full.unresolved}
    assert "declared more than once" in reasons["twice"]
    assert "apps/broken.yaml" in reasons["ghost"]  # an unreadable file is named where nothing declares the object
    assert {loc.drift.resource.name for loc in full.locations} == {"web", "listed", "escaped"}


def test_a_file_changed_after_detection_read_it_is_parsed_again(one_shot: None) -> None:
    with yamlreading.parse_scope(summary=declared_names):
        for file, text in FILES.items():
            if file != "apps/broken.yaml":
                load_all(text, source=file)
        changed = {**FILES, "apps/other-3.yaml": manifest("ConfigMap", "ghost")}  # now declares a drifted object
        result = located(changed)
    assert ("ghost", "apps/other-3.yaml") in {(loc.drift.resource.name, loc.file) for loc in result.locations}


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "hotfix"


def plan_example() -> PlanOutcome:
    return plan_target(spec=TargetSpec(name="hotfix"), repo=EXAMPLE / "gitops",
                       edges=Edges(live_path=EXAMPLE / "live.yaml"))  # fmt: skip


def test_a_one_shot_plan_keeps_none_of_detections_objects_only_the_drifted_objects_versions(one_shot: None) -> None:
    # what a plan holds after detection is what its own stage adds to, and a one-shot plan peaks at its end
    outcome = plan_example()
    assert outcome.detection is not None
    drifted = {d.resource.identity for d in outcome.detection.report.drifts}
    assert outcome.detection.live == () and outcome.detection.desired == ()
    live = {(o["kind"], o["metadata"]["name"]): o["metadata"]["resourceVersion"]
            for o in yaml.safe_load((EXAMPLE / "live.yaml").read_text())["items"]}  # fmt: skip
    assert drifted and set(outcome.versions) == drifted
    assert {i: live[(i[1], i[3])] for i in drifted} == dict(outcome.versions)
    assert [f.path for cs in outcome.plan.changesets for f in cs.files] == [
        "apps/checkout/configmap.yaml",
        "apps/checkout/deployment.yaml",
    ]


def test_a_service_cycles_plan_keeps_detections_objects() -> None:
    # the parse cache on, as in the service: its watch cache holds the live objects anyway, and a cycle's caller
    # may read them (bench/bench_warm.py checks that each warm cycle saw the objects changed before it)
    outcome = plan_example()
    assert outcome.detection is not None and outcome.detection.live and outcome.detection.desired
    assert set(outcome.versions) == {d.resource.identity for d in outcome.detection.report.drifts}
