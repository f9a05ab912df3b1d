"""The PR body as a reviewer sees it (issue 19, section 5), rendered by GitHub's own Markdown library (cmark-gfm):
well-formed tables, no raw HTML and no @mention from live values, and who and when before the field path.

Every body the bot sends to a fake forge is checked the same way (``tests/fakes/forge_server``: a violation fails
the test that sent it); here the checker is checked, and bodies with hostile live values are rendered directly."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from tests.cli.process import DEMO, writeback
from tests.forges.test_rendering import WEB, tricky_change_set
from tests.support.markdown import problems, render
from writeback.adapters.forges import registry as forges
from writeback.adapters.templating import load_templates
from writeback.kube.pathtypes import Key
from writeback.kube.refs import ObjectRef
from writeback.model import CapturedHotfix, ChangeSet, Decision, Drift, ManagerOperation, Op, Unresolved
from writeback.pr.text import RenderInput
from writeback.pr.text import render as render_pr

HOSTILE = '<img src=x onerror="alert(1)"> @octocat </code><script>x()</script> | `rm -rf` @all\nline two'


def test_the_checker_finds_what_a_reviewer_would_suffer() -> None:
    assert problems("| a | b |\n| --- | --- |\n| 1 | 2 |\n") == []
    assert problems("| a | b |\n| --- | --- |\n| 1 | 2 | 3 |\n") == ["line 3: 3 cells in a table of 2: '| 1 | 2 | 3 |'"]
    assert problems("| a | b |\n| --- | --- |\n| 1 |\n")  # a missing cell is padded silently by GFM
    assert problems("hello @octocat") == ["an @mention outside code: '@octocat'"]
    assert problems("hello <code>@octocat</code> and `@octocat` and a@b.c") == []  # code and e-mail: no mention
    assert problems('<img src=x onerror="alert(1)">') == ["raw HTML <img> in the rendered body",
                                                            "raw HTML: <img onerror='alert(1)'>"]  # fmt: skip
    assert problems("<details><summary>x</summary>\n\ny\n</details>\n- [ ] done\n") == []  # what templates use


def _hostile_change_set() -> ChangeSet:
    cs = tricky_change_set()
    cm = ObjectRef(api_version="v1", kind="ConfigMap", namespace="shop", name="hostile")
    annotation = (Key("metadata"), Key("annotations"), Key("team@example.com/owner|x"))
    drifts = (
        *cs.drifts,
        Drift(resource=WEB, path=(Key("spec"), Key("minReadySeconds")), op=Op.CHANGE, live=HOSTILE.splitlines()[0],
              git="@octocat", manager="@mallory <b>x</b>", operation=ManagerOperation.UPDATE, time="@now"),
        Drift(resource=WEB, path=annotation, op=Op.ADD, live=HOSTILE, manager="kubectl-annotate",
              operation=ManagerOperation.UPDATE),
        Drift(resource=cm, path=(), op=Op.ADD, decision=Decision.NEW, reason=f"created by {HOSTILE}"),
    )  # fmt: skip
    ignored = (*cs.ignored, Drift(resource=WEB, path=annotation, op=Op.ADD, decision=Decision.IGNORE,
                                  reason=f"owned by @controller {HOSTILE}"))  # fmt: skip
    unresolved = (*cs.unresolved, Unresolved(resource=cm, path=annotation, reason=HOSTILE))
    return replace(cs, drifts=drifts, ignored=ignored, unresolved=unresolved)


@pytest.mark.parametrize("platform", ["github", "gitlab"])
def test_hostile_live_values_render_as_text_without_html_or_mentions(platform: str) -> None:
    data = RenderInput(
        change_set=_hostile_change_set(), cluster="prod @sre", base="main", incident="INC-42", verification="ok",
        request_name=forges.by_name(platform).request_name,
        hotfixes=(CapturedHotfix(resource=WEB, manager="@mallory", time="t", reverted_by="@argocd <i>"),),
    )  # fmt: skip
    body = render_pr(templates=load_templates(), data=data).body
    assert problems(body) == []
    html = render(body)
    assert "<img" not in html and "<script" not in html and "&lt;script&gt;" in html  # shown, as text
    assert "<code>@mallory &lt;b&gt;x&lt;/b&gt;</code>" in html  # a manager: in code, exactly as it is
    assert "@octocat" in html  # values stay what they are inside code; outside it nobody is notified


def test_every_plan_body_of_the_demo_renders_well() -> None:
    plan = writeback("plan", *DEMO, "-o", "json")
    assert plan.returncode == 0, plan.stderr
    bodies = [cs["pullRequest"]["body"] for cs in json.loads(plan.stdout)["changesets"] if cs["pullRequest"]]
    assert bodies
    for body in bodies:
        assert problems(body) == []


def test_who_and_when_come_before_the_field_whatever_its_length() -> None:
    """The reviewer's first question is who changed it and when: those columns come first, so that a long path
    never pushes them off screen (GitHub scrolls a wide table, from the left); and the path may wrap after each dot
    (bench/pr_screenshot.py shows it at 1,000 px)."""
    plan = writeback("plan", *DEMO, "-o", "json")
    [cs] = [c for c in json.loads(plan.stdout)["changesets"] if c["pullRequest"]]
    html = render(cs["pullRequest"]["body"])
    fields = [t for t in re.findall(r"<table>.*?</table>", html, re.S) if "<th>Live value</th>" in t]
    assert len(fields) == 2  # the ConfigMap's and the Deployment's
    for table in fields:
        assert re.findall(r"<th>(.*?)</th>", table)[:3] == ["Changed by", "When", "Field"]
    assert any(re.search(r"env<wbr ?/?>\[name=<wbr ?/?>PAYMENT_TIMEOUT_MS\]", t) for t in fields), fields
    assert "2026-11-30T10:47:59Z" in html and "<code>kubectl-set</code> (Update)" in html
