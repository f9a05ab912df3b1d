"""A fake GitLab REST v4 API: merge requests, notes, branches, users.

Answers are the official examples of tests/data/forge-api/gitlab-operations.json with ids, iids, branches
and URLs filled in. Like GitLab, it allows one open MR per source branch (409), and a draft is a title prefix.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fakes.forge_server import FakeForge, Recorded, Reply, example, load_operations

OPS = load_operations("gitlab-operations.json")
_P = "/projects/{id}"
_MR = _P + "/merge_requests/{merge_request_iid}"
_DRAFT = ("Draft:", "[Draft]", "(Draft)")
_LABEL_FIELDS = ("labels", "add_labels", "remove_labels")


class GitLabFake(FakeForge):
    prefix = "/api/v4"

    def __init__(
        self,
        *,
        bare: Path,
        project: str = "platform/gitops",
        project_id: int = 77,
        tokens: tuple[str, ...] = ("glpat-test-token",),
        users: dict[str, int] | None = None,
    ) -> None:
        super().__init__(operations=OPS, bare=bare)
        self.project, self.project_id = project, project_id
        self.tokens = set(tokens)
        self.users = users if users is not None else {"alice": 11, "bob": 12}
        self.mrs: dict[int, dict[str, Any]] = {}
        self.notes: dict[int, list[dict[str, Any]]] = {}
        self._next = 1
        self._note_id = 300
        routes: list[tuple[str, Callable[..., Any]]] = [
            (f"GET {_P}", self.get_project),
            (f"GET {_P}/merge_requests", self.list_mrs),
            (f"POST {_P}/merge_requests", self.create_mr),
            (f"GET {_MR}", self.get_mr),
            (f"PUT {_MR}", self.update_mr),
            (f"GET {_MR}/commits", self.mr_commits),
            (f"GET {_MR}/notes", self.list_notes),
            (f"POST {_MR}/notes", self.create_note),
            (f"GET {_P}/repository/branches/{{branch}}", self.get_branch),
            (f"DELETE {_P}/repository/branches/{{branch}}", self.delete_branch),
            ("GET /user", self.get_user),
            ("GET /users", self.list_users),
        ]
        for key, handler in routes:
            self.route(key, handler)

    def relax(self, key: str, schema: dict[str, Any]) -> dict[str, Any]:
        props = schema.get("properties", {})
        for name in _LABEL_FIELDS:
            if name in props:  # the docs and python-gitlab send a comma-separated string (README)
                props[name] = {"anyOf": [props[name], {"type": "string"}]}
        return schema

    def extra_query(self, key: str) -> frozenset[str]:
        return frozenset({"page", "per_page"}) if key.startswith("GET") else frozenset()

    # ------------------------------------------------------------ helpers

    def _auth(self, rec: Recorded) -> None:
        if rec.headers.get("PRIVATE-TOKEN") not in self.tokens:
            raise Reply(401, {"message": "401 Unauthorized"})

    def _project(self, rec: Recorded, id: str) -> None:
        self._auth(rec)
        if id not in (self.project, str(self.project_id)):
            raise Reply(404, {"message": "404 Project Not Found"})

    def _mr(self, iid: str) -> dict[str, Any]:
        mr = self.mrs.get(int(iid))
        if mr is None:
            raise Reply(404, {"message": "404 Not found"})
        return self._merged_by_push(mr)

    def _merged_by_push(self, mr: dict[str, Any]) -> dict[str, Any]:
        """Like GitLab: an open MR whose source commit someone pushed to its target branch is merged."""
        head = self.bare.sha(mr["source_branch"]) or mr["sha"]
        if mr["state"] == "opened" and head and self.bare.contains(mr["target_branch"], head):
            mr.update(state="merged", merged_at="2026-11-30T12:00:00Z")
        return mr

    def _user(self, uid: int) -> dict[str, Any]:
        name = next((n for n, i in self.users.items() if i == uid), f"user{uid}")
        base = example(OPS, "GET /users", "200", "regular-user")[0]
        return {**base, "id": uid, "username": name, "name": name.title(), "web_url": f"https://gitlab.example/{name}"}

    def mr_json(self, mr: dict[str, Any], *, key: str = f"GET {_MR}") -> dict[str, Any]:
        """The MR in the shape of the official example of operation ``key`` (list, create, get, update differ)."""
        status = "201" if key.startswith("POST") else "200"
        shaped = example(OPS, key, status)
        value = {**example(OPS, f"GET {_MR}", "200"), **(shaped[0] if isinstance(shaped, list) else shaped)}
        iid = mr["iid"]
        draft = mr["title"].startswith(_DRAFT)
        value.update(
            id=9000 + iid, iid=iid, project_id=self.project_id, source_project_id=self.project_id,
            target_project_id=self.project_id, title=mr["title"], description=mr["description"], state=mr["state"],
            source_branch=mr["source_branch"], target_branch=mr["target_branch"],
            sha=self.bare.sha(mr["source_branch"]) or mr["sha"], draft=draft, work_in_progress=draft,
            labels=list(mr["labels"]), reviewers=[self._user(u) for u in mr["reviewer_ids"]],
            assignees=[self._user(u) for u in mr["assignee_ids"]],
            assignee=self._user(mr["assignee_ids"][0]) if mr["assignee_ids"] else None,
            merged_at=mr["merged_at"], closed_at=mr["closed_at"], reference=f"!{iid}",
            merge_commit_sha=None, squash_commit_sha=None,  # a fast-forward merge makes neither
            references={"short": f"!{iid}", "relative": f"!{iid}", "full": f"{self.project}!{iid}"},
            web_url=f"https://gitlab.example/{self.project}/-/merge_requests/{iid}",
            user_notes_count=len(self.notes.get(iid, [])),
        )  # fmt: skip
        value["author"] = {**value["author"], "username": "writeback-bot", "id": 99}
        return value

    @staticmethod
    def _labels(value: Any) -> list[str]:
        items = value.split(",") if isinstance(value, str) else list(value)
        return [s.strip() for s in items if s.strip()]

    # ------------------------------------------------------------ test controls

    def close_by_person(self, iid: int) -> None:
        self.mrs[iid].update(state="closed", closed_at="2026-11-30T12:00:00Z")

    def merge(self, iid: int) -> None:
        mr = self.mrs[iid]
        sha = self.bare.sha(mr["source_branch"])
        if sha:
            self.bare._git("update-ref", f"refs/heads/{mr['target_branch']}", sha)
        mr.update(state="merged", merged_at="2026-11-30T12:00:00Z")

    # ------------------------------------------------------------ handlers

    def get_project(self, rec: Recorded, id: str) -> Any:
        self._project(rec, id)
        value = example(OPS, f"GET {_P}", "200")
        value.update(id=self.project_id, path_with_namespace=self.project)
        return value

    def list_mrs(self, rec: Recorded, id: str) -> Any:
        self._project(rec, id)
        state = rec.query.get("state", ["all"])[0]
        branch = rec.query.get("source_branch", [None])[0]
        out = []
        for mr in sorted(self.mrs.values(), key=lambda m: m["iid"], reverse=True):
            self._merged_by_push(mr)
            if state != "all" and mr["state"] != state:
                continue
            if branch is not None and mr["source_branch"] != branch:
                continue
            out.append(self.mr_json(mr, key=f"GET {_P}/merge_requests"))
        return out

    def create_mr(self, rec: Recorded, id: str) -> Any:
        self._project(rec, id)
        body = rec.body or {}
        source, target = body.get("source_branch", ""), body.get("target_branch", "")
        if self.bare.sha(source) is None or self.bare.sha(target) is None:
            raise Reply(400, {"message": "Invalid source or target branch"})
        for mr in self.mrs.values():
            if mr["state"] == "opened" and mr["source_branch"] == source and mr["target_branch"] == target:
                message = f"Another open merge request already exists for this source branch: !{mr['iid']}"
                raise Reply(409, {"message": [message]})
        for uid in [*body.get("reviewer_ids", []), *body.get("assignee_ids", [])]:
            if uid not in self.users.values():
                raise Reply(404, {"message": "404 User Not Found"})
        iid = self._next
        self._next += 1
        self.mrs[iid] = {
            "iid": iid, "title": body.get("title", ""), "description": body.get("description", ""),
            "source_branch": source, "target_branch": target, "sha": self.bare.sha(source), "state": "opened",
            "labels": self._labels(body.get("labels", [])), "reviewer_ids": list(body.get("reviewer_ids", [])),
            "assignee_ids": list(body.get("assignee_ids", [])), "merged_at": None, "closed_at": None,
        }  # fmt: skip
        return 201, self.mr_json(self.mrs[iid], key=f"POST {_P}/merge_requests")

    def get_mr(self, rec: Recorded, id: str, merge_request_iid: str) -> Any:
        self._project(rec, id)
        return self.mr_json(self._mr(merge_request_iid))

    def update_mr(self, rec: Recorded, id: str, merge_request_iid: str) -> Any:
        self._project(rec, id)
        mr = self._mr(merge_request_iid)
        body = rec.body or {}
        for k in ("title", "description"):
            if k in body:
                mr[k] = body[k]
        if "labels" in body:
            mr["labels"] = self._labels(body["labels"])
        for name in self._labels(body.get("add_labels", [])):
            if name not in mr["labels"]:
                mr["labels"].append(name)
        for k in ("reviewer_ids", "assignee_ids"):
            if k in body:
                mr[k] = list(body[k])
        if body.get("state_event") == "close" and mr["state"] == "opened":
            mr.update(state="closed", closed_at="2026-11-30T12:00:00Z")
        elif body.get("state_event") == "reopen" and mr["state"] == "closed":
            mr.update(state="opened", closed_at=None)
        return self.mr_json(mr, key=f"PUT {_MR}")

    def mr_commits(self, rec: Recorded, id: str, merge_request_iid: str) -> Any:
        self._project(rec, id)
        mr = self._mr(merge_request_iid)
        template = example(OPS, f"GET {_MR}/commits", "200")[0]
        out = []
        for c in self.bare.commits(mr["target_branch"], mr["source_branch"]):
            item = copy.deepcopy(template)
            item.update(id=c["sha"], short_id=c["sha"][:8], title=c["message"], message=c["message"])
            item.update({k: c[k] for k in ("author_name", "author_email", "committer_name", "committer_email")})
            out.append(item)
        return out

    def _note_json(self, iid: int, note: dict[str, Any]) -> Any:
        value = example(OPS, f"POST {_MR}/notes", "201")
        value.update(
            id=note["id"], body=note["body"], noteable_iid=iid, project_id=self.project_id, system=note["system"]
        )
        value["author"] = {**value["author"], "username": note["user"]}
        return value

    def list_notes(self, rec: Recorded, id: str, merge_request_iid: str) -> Any:
        self._project(rec, id)
        iid = self._mr(merge_request_iid)["iid"]
        return [self._note_json(iid, n) for n in reversed(self.notes.get(iid, []))]

    def create_note(self, rec: Recorded, id: str, merge_request_iid: str) -> Any:
        self._project(rec, id)
        iid = self._mr(merge_request_iid)["iid"]
        self._note_id += 1
        note = {"id": self._note_id, "body": (rec.body or {}).get("body", ""), "user": "writeback-bot", "system": False}
        self.notes.setdefault(iid, []).append(note)
        return 201, self._note_json(iid, note)

    def add_system_note(self, iid: int, body: str) -> None:
        self._note_id += 1
        self.notes.setdefault(iid, []).append({"id": self._note_id, "body": body, "user": "alice", "system": True})

    def get_branch(self, rec: Recorded, id: str, branch: str) -> Any:
        self._project(rec, id)
        sha = self.bare.sha(branch)
        if sha is None:
            raise Reply(404, {"message": "404 Branch Not Found"})
        value = example(OPS, f"GET {_P}/repository/branches/{{branch}}", "200")
        value["name"] = branch
        value["commit"] = {**value["commit"], "id": sha, "short_id": sha[:8]}
        return value

    def delete_branch(self, rec: Recorded, id: str, branch: str) -> Any:
        self._project(rec, id)
        if not self.bare.delete(branch):
            raise Reply(404, {"message": "404 Branch Not Found"})
        return 204, None

    def get_user(self, rec: Recorded) -> Any:
        self._auth(rec)
        return {**example(OPS, "GET /user", "200", "regular-user"), "id": 99, "username": "writeback-bot"}

    def list_users(self, rec: Recorded) -> Any:
        self._auth(rec)
        wanted = rec.query.get("username", [None])[0]
        return [self._user(uid) for name, uid in self.users.items() if wanted is None or name.lower() == wanted.lower()]
