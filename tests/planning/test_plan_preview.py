"""``writeback plan`` text: a change set that changes no file shows no pull request preview (run opens none)."""

from __future__ import annotations

from pathlib import Path

import pytest

import writeback.cli

MANIFEST = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: prod}\ndata: {token: old}\n"
LIVE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: prod
  managedFields:
  - {manager: kubectl-edit, operation: Update, time: "2026-11-30T03:00:00Z", fieldsType: FieldsV1,
     fieldsV1: {"f:data": {"f:token": {}}}}
data: {token: s3cr3t-live}
"""


def test_report_only_change_set_has_no_pull_request_preview(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "repo" / "apps").mkdir(parents=True)
    (tmp_path / "repo" / "apps" / "cfg.yaml").write_text(MANIFEST)
    (tmp_path / "live.yaml").write_text(LIVE)
    (tmp_path / "wb.yaml").write_text(
        f"targets:\n  - name: prod\n    repo_url: {tmp_path / 'repo'}\n    path: apps\n"
        "    policy: {sensitive_paths: ['data.token']}\n"
    )

    code = writeback.cli.main(["plan", "--config", str(tmp_path / "wb.yaml"), "--live", str(tmp_path / "live.yaml")])

    out = capsys.readouterr().out
    assert code == 0
    assert "sensitive field: report-only" in out and "no file changes" in out
    assert "pull request title" not in out
    assert "s3cr3t-live" not in out
