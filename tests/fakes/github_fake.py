"""A fake GitHub REST API: pull requests, comments, labels, reviewers, assignees, refs, App installation tokens.

Answers are the official examples of tests/data/forge-api/github-operations.json with ids, numbers, branches
and URLs filled in. Like GitHub, it allows one open pull request per head branch (422 with the known message).
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jwt

from tests.fakes.forge_server import FakeForge, Recorded, Reply, example, load_operations

OPS = load_operations("github-operations.json")
_R = "/repos/{owner}/{repo}"
TOKEN = "ghp_test_token"  # the token the fake accepts unless told otherwise
PROJECT = "octo-org/gitops"  # the project of the tests' forge config


class GitHubFake(FakeForge):
    multi_segment = frozenset({"ref"})

    def __init__(
        self,
        *,
        bare: Path,
        owner: str = "octo-org",
        repo: str = "gitops",
        tokens: tuple[str, ...] = (TOKEN,),
        app_id: int | None = None,
        app_public_key: str | None = None,
        installation_id: int = 4242,
    ) -> None:
        super().__init__(operations=OPS, bare=bare)
        self.owner, self.repo = owner, repo
        self.tokens = set(tokens)
        self.app_id, self.app_public_key, self.installation_id = app_id, app_public_key, installation_id
        self.installation_tokens: list[str] = []
        self.prs: dict[int, dict[str, Any]] = {}
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self._next = 1
        self._comment_id = 100
        self.bot_login = "writeback-bot"
        routes: list[tuple[str, Callable[..., Any]]] = [
            (f"GET {_R}", self.get_repo),
            ("GET /user", self.get_user),
            ("GET /rate_limit", self.rate_limit),
            (f"GET {_R}/pulls", self.list_pulls),
            (f"POST {_R}/pulls", self.create_pull),
            (f"GET {_R}/pulls/{{pull_number}}", self.get_pull),
            (f"PATCH {_R}/pulls/{{pull_number}}", self.update_pull),
            (f"GET {_R}/pulls/{{pull_number}}/commits", self.pull_commits),
            (f"POST {_R}/pulls/{{pull_number}}/requested_reviewers", self.request_reviewers),
            (f"POST {_R}/issues/{{issue_number}}/labels", self.add_labels),
            (f"GET {_R}/issues/{{issue_number}}/labels", self.get_labels),
            (f"POST {_R}/issues/{{issue_number}}/assignees", self.add_assignees),
            (f"GET {_R}/issues/{{issue_number}}/comments", self.list_comments),
            (f"POST {_R}/issues/{{issue_number}}/comments", self.create_comment),
            (f"GET {_R}/git/ref/{{ref}}", self.get_ref),
            (f"DELETE {_R}/git/refs/{{ref}}", self.delete_ref),
            (f"GET {_R}/installation", self.get_installation),
            ("POST /app/installations/{installation_id}/access_tokens", self.access_token),
        ]
        for key, handler in routes:
            self.route(key, handler)
        # PyGithub's get_git_ref reads GET .../git/refs/{ref}, answered like GET .../git/ref/{ref} (README).
        self.route(f"GET {_R}/git/ref/{{ref}}", self.get_ref, template=f"{_R}/git/refs/{{ref}}")

    # ------------------------------------------------------------ validation quirks

    def relax(self, key: str, schema: dict[str, Any]) -> dict[str, Any]:
        if key.endswith("/labels") and key.startswith("POST"):
            obj = copy.deepcopy(schema["oneOf"][0])
            obj["additionalProperties"] = False
            return {"anyOf": [obj, {"type": "array", "items": {"type": "string"}, "minItems": 1}]}
        return schema

    # ------------------------------------------------------------ auth and filling

    def _auth(self, rec: Recorded, *, app: bool = False) -> None:
        header = rec.headers.get("Authorization", "")
        scheme, _, value = header.partition(" ")
        if app:
            try:
                claims = jwt.decode(value, self.app_public_key or "", algorithms=["RS256"])
            except jwt.PyJWTError as e:
                raise Reply(401, {"message": f"A JSON web token could not be decoded: {e}"}) from e
            if str(claims.get("iss")) != str(self.app_id):
                raise Reply(401, {"message": "'Issuer' claim ('iss') must be an Integer"})
            return
        if scheme.lower() not in ("token", "bearer") or value not in self.tokens:
            raise Reply(401, {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})

    def _fill(self, value: Any) -> Any:
        text = json.dumps(value)
        text = text.replace("https://api.github.com", self.url).replace(
            "octocat/Hello-World", f"{self.owner}/{self.repo}"
        )
        return json.loads(text)

    def _pr(self, number: str) -> dict[str, Any]:
        pr = self.prs.get(int(number))
        if pr is None:
            raise Reply(404, {"message": "Not Found"})
        return self._merged_by_push(pr)

    def _merged_by_push(self, pr: dict[str, Any]) -> dict[str, Any]:
        """Like GitHub: an open PR whose head commit someone pushed to its base branch is merged."""
        head = self.bare.sha(pr["head"]) or pr.get("head_sha")
        if pr["state"] == "open" and head and self.bare.contains(pr["base"], head):
            pr.update(state="closed", closed_at="2026-11-30T12:00:00Z", merged_at="2026-11-30T12:00:00Z",
                      merge_commit_sha=head)  # fmt: skip
        return pr

    def pr_json(self, pr: dict[str, Any], *, simple: bool = False) -> dict[str, Any]:
        key = f"GET {_R}/pulls" if simple else f"GET {_R}/pulls/{{pull_number}}"
        answer = example(OPS, key, "200")
        value: dict[str, Any] = self._fill(answer[0] if simple else answer)
        n = pr["number"]
        api = f"{self.url}/repos/{self.owner}/{self.repo}"
        head_sha = self.bare.sha(pr["head"]) or pr.get("head_sha")
        value.update(
            id=1000 + n,
            number=n,
            url=f"{api}/pulls/{n}",
            html_url=f"https://github.example/{self.owner}/{self.repo}/pull/{n}",
            issue_url=f"{api}/issues/{n}",
            comments_url=f"{api}/issues/{n}/comments",
            commits_url=f"{api}/pulls/{n}/commits",
            review_comments_url=f"{api}/pulls/{n}/comments",
            statuses_url=f"{api}/statuses/{head_sha}",
            state=pr["state"],
            title=pr["title"],
            body=pr["body"],
            draft=pr["draft"],
            labels=[{**value["labels"][0], "name": name} for name in pr["labels"]] if value["labels"] else [],
            assignees=[{**value["user"], "login": a} for a in pr["assignees"]],
            requested_reviewers=[{**value["user"], "login": r} for r in pr["reviewers"]],
            requested_teams=[],
            closed_at=pr["closed_at"],
            merged_at=pr["merged_at"],
            merge_commit_sha=pr.get("merge_commit_sha"),
        )
        value["user"] = {**value["user"], "login": self.bot_login}
        value["head"] = {**value["head"], "ref": pr["head"], "sha": head_sha, "label": f"{self.owner}:{pr['head']}"}
        value["base"] = {
            **value["base"],
            "ref": pr["base"],
            "sha": self.bare.sha(pr["base"]) or "",
            "label": f"{self.owner}:{pr['base']}",
        }
        if not simple:
            value.update(merged=pr["merged_at"] is not None, comments=len(self.comments.get(n, [])))
        return value

    # ------------------------------------------------------------ test controls

    def close_by_person(self, number: int) -> None:
        self.prs[number].update(state="closed", closed_at="2026-11-30T12:00:00Z")

    def merge(self, number: int) -> None:
        """Merge like the merge button with fast-forward: the base branch moves to the PR's head."""
        pr = self.prs[number]
        sha = self.bare.sha(pr["head"])
        if sha:
            self.bare._git("update-ref", f"refs/heads/{pr['base']}", sha)
        pr.update(state="closed", closed_at="2026-11-30T12:00:00Z", merged_at="2026-11-30T12:00:00Z",
                  merge_commit_sha=sha)  # fmt: skip

    # ------------------------------------------------------------ handlers

    def get_repo(self, rec: Recorded, owner: str, repo: str) -> Any:
        self._auth(rec)
        return self._fill(example(OPS, f"GET {_R}", "200"))

    def get_user(self, rec: Recorded) -> Any:
        self._auth(rec)
        return {**self._fill(example(OPS, "GET /user", "200")), "login": self.bot_login}

    def rate_limit(self, rec: Recorded) -> Any:
        return example(OPS, "GET /rate_limit", "200")

    def list_pulls(self, rec: Recorded, owner: str, repo: str) -> Any:
        self._auth(rec)
        state = rec.query.get("state", ["open"])[0]
        head = rec.query.get("head", [None])[0]
        base = rec.query.get("base", [None])[0]
        out = []
        for pr in sorted(self.prs.values(), key=lambda p: p["number"], reverse=True):
            self._merged_by_push(pr)
            if state != "all" and pr["state"] != state:
                continue
            if head is not None and head != f"{self.owner}:{pr['head']}":
                continue
            if base is not None and base != pr["base"]:
                continue
            out.append(self.pr_json(pr, simple=True))
        return out

    def create_pull(self, rec: Recorded, owner: str, repo: str) -> Any:
        self._auth(rec)
        body = rec.body or {}
        head, base = body.get("head", ""), body.get("base", "")
        head_branch = head.split(":", 1)[-1]
        if self.bare.sha(head_branch) is None or self.bare.sha(base) is None:
            raise Reply(
                422,
                {
                    "message": "Validation Failed",
                    "errors": [{"resource": "PullRequest", "field": "head", "code": "invalid"}],
                },
            )
        for pr in self.prs.values():
            if pr["state"] == "open" and pr["head"] == head_branch and pr["base"] == base:
                raise Reply(
                    422,
                    {
                        "message": "Validation Failed",
                        "errors": [
                            {
                                "resource": "PullRequest",
                                "code": "custom",
                                "message": f"A pull request already exists for {self.owner}:{head_branch}.",
                            }
                        ],
                        "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
                    },
                )
        n = self._next
        self._next += 1
        self.prs[n] = {
            "number": n, "title": body.get("title", ""), "body": body.get("body"), "head": head_branch, "base": base,
            "head_sha": self.bare.sha(head_branch), "state": "open", "draft": bool(body.get("draft", False)),
            "labels": [], "reviewers": [], "assignees": [], "closed_at": None, "merged_at": None,
        }  # fmt: skip
        return 201, self.pr_json(self.prs[n])

    def get_pull(self, rec: Recorded, owner: str, repo: str, pull_number: str) -> Any:
        self._auth(rec)
        return self.pr_json(self._pr(pull_number))

    def update_pull(self, rec: Recorded, owner: str, repo: str, pull_number: str) -> Any:
        self._auth(rec)
        pr = self._pr(pull_number)
        body = rec.body or {}
        for k in ("title", "body"):
            if k in body:
                pr[k] = body[k]
        if body.get("state") == "closed" and pr["state"] == "open":
            pr.update(state="closed", closed_at="2026-11-30T12:00:00Z")
        elif body.get("state") == "open":
            pr.update(state="open", closed_at=None)
        return self.pr_json(pr)

    def pull_commits(self, rec: Recorded, owner: str, repo: str, pull_number: str) -> Any:
        self._auth(rec)
        pr = self._pr(pull_number)
        template = self._fill(example(OPS, f"GET {_R}/pulls/{{pull_number}}/commits", "200")[0])
        out = []
        for c in reversed(self.bare.commits(pr["base"], pr["head"])):
            item = copy.deepcopy(template)
            item["sha"] = c["sha"]
            item["commit"]["author"] = {"name": c["author_name"], "email": c["author_email"], "date": c["date"]}
            item["commit"]["committer"] = {
                "name": c["committer_name"],
                "email": c["committer_email"],
                "date": c["date"],
            }
            item["commit"]["message"] = c["message"]
            out.append(item)
        return out

    def request_reviewers(self, rec: Recorded, owner: str, repo: str, pull_number: str) -> Any:
        self._auth(rec)
        pr = self._pr(pull_number)
        for r in (rec.body or {}).get("reviewers", []):
            if r == self.bot_login:
                raise Reply(422, {"message": "Review cannot be requested from pull request author."})
            if r not in pr["reviewers"]:
                pr["reviewers"].append(r)
        return 201, self.pr_json(pr)

    def _label_list(self, pr: dict[str, Any]) -> list[dict[str, Any]]:
        template = self._fill(example(OPS, f"GET {_R}/issues/{{issue_number}}/labels", "200")[0])
        return [{**template, "name": name, "id": 500 + i} for i, name in enumerate(pr["labels"])]

    def add_labels(self, rec: Recorded, owner: str, repo: str, issue_number: str) -> Any:
        self._auth(rec)
        pr = self._pr(issue_number)
        names = rec.body if isinstance(rec.body, list) else (rec.body or {}).get("labels", [])
        for name in names:
            name = name["name"] if isinstance(name, dict) else name
            if name not in pr["labels"]:
                pr["labels"].append(name)
        return self._label_list(pr)

    def get_labels(self, rec: Recorded, owner: str, repo: str, issue_number: str) -> Any:
        self._auth(rec)
        return self._label_list(self._pr(issue_number))

    def add_assignees(self, rec: Recorded, owner: str, repo: str, issue_number: str) -> Any:
        self._auth(rec)
        pr = self._pr(issue_number)
        for a in (rec.body or {}).get("assignees", []):
            if a not in pr["assignees"]:
                pr["assignees"].append(a)
        issue = self._fill(example(OPS, f"POST {_R}/issues/{{issue_number}}/assignees", "201"))
        people = [{**issue["user"], "login": a} for a in pr["assignees"]]
        issue.update(number=pr["number"], title=pr["title"], body=pr["body"], state=pr["state"], assignees=people,
                     assignee=people[0] if people else None)  # fmt: skip
        return 201, issue

    def _comment_json(self, number: int, c: dict[str, Any]) -> Any:
        value = self._fill(example(OPS, f"GET {_R}/issues/{{issue_number}}/comments", "200")[0])
        value.update(id=c["id"], body=c["body"], issue_url=f"{self.url}/repos/{self.owner}/{self.repo}/issues/{number}")
        value["url"] = f"{self.url}/repos/{self.owner}/{self.repo}/issues/comments/{c['id']}"
        value["user"] = {**value["user"], "login": c["user"]}
        return value

    def list_comments(self, rec: Recorded, owner: str, repo: str, issue_number: str) -> Any:
        self._auth(rec)
        n = self._pr(issue_number)["number"]
        return [self._comment_json(n, c) for c in self.comments.get(n, [])]

    def create_comment(self, rec: Recorded, owner: str, repo: str, issue_number: str) -> Any:
        self._auth(rec)
        n = self._pr(issue_number)["number"]
        self._comment_id += 1
        c = {"id": self._comment_id, "body": (rec.body or {}).get("body", ""), "user": self.bot_login}
        self.comments.setdefault(n, []).append(c)
        return 201, self._comment_json(n, c)

    def add_person_comment(self, number: int, body: str, user: str = "alice") -> None:
        self._comment_id += 1
        self.comments.setdefault(number, []).append({"id": self._comment_id, "body": body, "user": user})

    def get_ref(self, rec: Recorded, owner: str, repo: str, ref: str) -> Any:
        self._auth(rec)
        branch = ref.removeprefix("heads/")
        sha = self.bare.sha(branch)
        if sha is None:
            raise Reply(404, {"message": "Not Found"})
        value = self._fill(example(OPS, f"GET {_R}/git/ref/{{ref}}", "200"))
        value.update(
            ref=f"refs/heads/{branch}", url=f"{self.url}/repos/{self.owner}/{self.repo}/git/refs/heads/{branch}"
        )
        value["object"] = {**value["object"], "sha": sha}
        return value

    def delete_ref(self, rec: Recorded, owner: str, repo: str, ref: str) -> Any:
        self._auth(rec)
        if not ref.startswith("heads/") or not self.bare.delete(ref.removeprefix("heads/")):
            raise Reply(422, {"message": "Reference does not exist"})
        return 204, None

    def get_installation(self, rec: Recorded, owner: str, repo: str) -> Any:
        self._auth(rec, app=True)
        value = self._fill(example(OPS, f"GET {_R}/installation", "200"))
        value.update(id=self.installation_id, app_id=self.app_id)
        return value

    def access_token(self, rec: Recorded, installation_id: str) -> Any:
        self._auth(rec, app=True)
        if int(installation_id) != self.installation_id:
            raise Reply(404, {"message": "Not Found"})
        token = f"ghs_installation_{len(self.installation_tokens) + 1}"
        self.installation_tokens.append(token)
        self.tokens.add(token)
        value = self._fill(example(OPS, "POST /app/installations/{installation_id}/access_tokens", "201"))
        value.update(token=token, expires_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600)))
        return 201, value
