"""Which values keys control each drifted field: found by rendering with perturbed values, within a budget. Pure.

Every round perturbs the candidates of all fields still open at once (distinct tokens tell them apart), renders
once through the caller's ``render``, and reads where the tokens landed. A field that changed without a token
(a flag flipped) is narrowed by halving; a round whose render fails is split in two; a field that no candidate
moved gets the broadened candidates once. See ``candidates.py`` for what is perturbed and ``solving.py`` for how
the new values are found.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from writeback.charts import RenderFailed
from writeback.kube.paths import lookup
from writeback.kube.pathtypes import ABSENT, FieldPath, Index, Select
from writeback.model import Drift, Op
from writeback.sources.helm.candidates import Perturb, Sentinels, add_candidates, scalar_candidates, tree_candidates
from writeback.sources.helm.rendered import RenderedObject, Rendering
from writeback.sources.helm.schema import Schema
from writeback.sources.helm.solving import Edits, locate_tokens, solve_add, solve_remove, solve_scalar
from writeback.sources.helm.values import ValuesPath, format_key, get_value, set_value

__all__ = ["Mode", "Target", "target_for", "trace"]

Render = Callable[[Mapping[str, Any], frozenset[ValuesPath]], Rendering]


class Mode(enum.StrEnum):
    SCALAR = "scalar"  # a rendered scalar changed or was removed
    TREE = "tree"  # a rendered map or list item was removed
    ADD = "add"  # a field that the render does not have


@dataclass
class Target:
    """One drifted field being traced."""

    drift: Drift
    obj: RenderedObject
    mode: Mode
    path: FieldPath  # the field (ADD: its nearest ancestor in the render)
    positional: FieldPath  # the same with list positions, to find it when a perturbation renames an item
    git: Any
    rest: FieldPath = ()  # ADD: from the anchor to the field
    first: list[ValuesPath] = field(default_factory=list)
    later: list[ValuesPath] = field(default_factory=list)
    tried: set[ValuesPath] = field(default_factory=set)
    suspects: list[ValuesPath] = field(default_factory=list)
    half: list[ValuesPath] = field(default_factory=list)
    broadened: bool = False
    result: Edits | str | None = None  # edits, or why none
    keys: tuple[ValuesPath, ...] = ()  # the keys found to control it

    @property
    def open(self) -> bool:
        return self.result is None


def _positional(body: Any, path: FieldPath) -> FieldPath | None:
    out: list[Any] = []
    at = body
    for seg in path:
        if isinstance(seg, Select):
            if not isinstance(at, list):
                return None
            idx = next((i for i, item in enumerate(at) if seg.matches(item)), None)
            if idx is None:
                return None
            out.append(Index(idx))
            at = at[idx]
        else:
            out.append(seg)
            at = lookup(at, (seg,))
            if at is ABSENT:
                return None
    return tuple(out)


def _value(obj: RenderedObject | None, target: Target) -> Any:
    if obj is None:
        return ABSENT
    got = lookup(obj.body, target.path)
    return lookup(obj.body, target.positional) if got is ABSENT else got


def target_for(drift: Drift, obj: RenderedObject, effective: Mapping[str, Any]) -> Target | str:
    """How to trace ``drift`` in ``obj`` (its object in the render of the Git values), or why it cannot be."""
    path = drift.path
    git = lookup(obj.body, path)
    if drift.op is Op.ADD or git is ABSENT:
        if drift.op is not Op.ADD:
            return "the field is not in the render of the Git values"
        for cut in range(len(path) - 1, -1, -1):
            anchor = lookup(obj.body, path[:cut])
            if anchor is not ABSENT and isinstance(anchor, Mapping | list):
                item = any(isinstance(s, Select | Index) for s in path[cut:])  # a list item, maybe in a new list
                first, later = add_candidates(effective, anchor, item=item)
                return Target(
                    drift=drift,
                    obj=obj,
                    mode=Mode.ADD,
                    path=path[:cut],
                    positional=_positional(obj.body, path[:cut]) or path[:cut],
                    git=anchor,
                    rest=path[cut:],
                    first=first,
                    later=later,
                )
        return "the field's object has no place for it"
    positional = _positional(obj.body, path) or path
    if isinstance(git, Mapping | list):
        first, later = tree_candidates(effective, git)
        return Target(
            drift=drift, obj=obj, mode=Mode.TREE, path=path, positional=positional, git=git, first=first, later=later
        )
    first, later = scalar_candidates(effective, git, drift.live if drift.op is Op.CHANGE else None)
    return Target(
        drift=drift, obj=obj, mode=Mode.SCALAR, path=path, positional=positional, git=git, first=first, later=later
    )


class _Tracer:
    def __init__(
        self, *, targets: list[Target], effective: Mapping[str, Any], schema: Schema, render: Render, budget: int
    ) -> None:
        self.targets, self.effective, self.render_fn, self.budget = targets, effective, render, budget
        self.sentinels = Sentinels(schema=schema)
        self.renders = 0
        self.failed: dict[ValuesPath, str] = {}
        self.queue: list[list[ValuesPath]] = []
        self.perturbs: dict[ValuesPath, Perturb | None] = {}

    # ------------------------------------------------------------ what to perturb next

    def _perturb(self, key: ValuesPath, target: Target) -> Perturb | None:
        if key not in self.perturbs:
            current = get_value(self.effective, key)
            if target.mode is Mode.ADD:
                self.perturbs[key] = self.sentinels.addition(key, current, target.drift.live)
            else:
                like = target.git if not isinstance(target.git, Mapping | list) else ""
                self.perturbs[key] = self.sentinels.scalar(key, current, like)
        return self.perturbs[key]

    def _wants(self, t: Target) -> list[ValuesPath]:
        if t.half:
            return t.half
        fresh = [k for k in t.first if k not in t.tried and k not in self.failed]
        if not fresh and not t.broadened:
            t.broadened = True
            t.first = [k for k in t.later if k not in t.tried]
            fresh = [k for k in t.first if k not in self.failed]
        return fresh

    def _next(self) -> dict[ValuesPath, Perturb]:
        while self.queue:
            keys = [k for k in self.queue.pop(0) if k not in self.failed and self.perturbs.get(k) is not None]
            if keys:
                return {k: p for k in keys if (p := self.perturbs[k]) is not None}
        probe: dict[ValuesPath, Perturb] = {}
        blocked: set[ValuesPath] = set()
        for t in self.targets:
            if t.open and t.half:
                blocked |= set(t.suspects) - set(t.half)
        for t in self.targets:
            if not t.open:
                continue
            wants = self._wants(t)
            if not wants and not t.half:
                t.result = self._none(t)
                continue
            made = [(k, self._perturb(k, t)) for k in wants]
            t.tried |= {k for k, p in made if p is None}
            # Flags (no token) go after the tokens: a flipped flag changes the text around the tokens.
            tokened = [(k, p) for k, p in made if p is not None and (p.tokens or t.half)]
            chosen = tokened or [(k, p) for k, p in made if p is not None]
            for k, p in chosen:
                if k in blocked or k in probe or any(_overlaps(k, o) for o in probe):
                    continue
                assert p is not None
                probe[k] = p
        return probe

    # ------------------------------------------------------------ rendering and reading

    def _overlay(self, probe: Mapping[ValuesPath, Perturb]) -> tuple[dict[str, Any], frozenset[ValuesPath]]:
        work = copy.deepcopy(dict(self.effective))
        for p in sorted(probe.values(), key=lambda p: p.adds):
            set_value(work, p.key, p.value)
        overlay: dict[str, Any] = {}
        tops: set[ValuesPath] = set()
        for key in probe:
            cut = next((i for i, s in enumerate(key) if isinstance(s, int)), len(key))
            tops.add(key[:cut])
        for top in tops:
            set_value(overlay, top, copy.deepcopy(get_value(work, top)))
        return overlay, frozenset(tops)

    def run(self) -> None:
        while self.renders < self.budget:
            probe: dict[ValuesPath, Perturb] = {}
            for _ in range(4):  # a round may only close fields (nothing left to perturb for them)
                probe = self._next()
                if probe or not any(t.open for t in self.targets):
                    break
            if not probe:
                break
            overlay, tops = self._overlay(probe)
            self.renders += 1
            try:
                rendering = self.render_fn(overlay, tops)
            except RenderFailed as e:
                self._failed(probe, str(e))
                continue
            for t in self.targets:
                if t.open:
                    self._observe(t, rendering, probe)
        for t in self.targets:
            if t.open:
                done = t.broadened and not t.half and all(k in t.tried or k in self.failed for k in t.first)
                t.result = self._none(t) if done else f"not traced within the render budget ({self.budget} renders)"

    def _failed(self, probe: Mapping[ValuesPath, Perturb], message: str) -> None:
        keys = list(probe)
        if len(keys) == 1:
            self.failed[keys[0]] = message.strip().splitlines()[0] if message.strip() else message
            return
        named = [k for k in keys if any(tok in message for tok in probe[k].tokens)]
        rest = [k for k in keys if k not in named]
        if named and rest:
            self.queue[:0] = [rest, named]
        else:
            mid = len(keys) // 2
            self.queue[:0] = [keys[:mid], keys[mid:]]

    def _observe(self, t: Target, rendering: Rendering, probe: Mapping[ValuesPath, Perturb]) -> None:
        mine = [k for k in probe if k in t.first or k in t.suspects]
        after = rendering.counterpart(t.obj)
        value = _value(after, t)
        issued = {tok: p.key for p in probe.values() for tok in p.tokens}
        if not mine and (t.mode is Mode.ADD or not any(True for _ in locate_tokens(value, issued))):
            return
        if t.mode is Mode.ADD:
            why = ""
            for k in mine:
                p = probe[k]
                if p.adds and any(True for _ in locate_tokens(value, {tok: k for tok in p.tokens})):
                    solved = solve_add(p, value, t.rest, t.drift.live, effective=self.effective)
                    if not isinstance(solved, str):  # the entry lands where the field is: this key
                        t.keys, t.result = (k,), solved
                        return
                    why = why or solved  # it lands near (another map of the same object): keep looking
            t.tried |= set(mine)
            if why and not any(k not in t.tried for k in t.first):
                t.result = why
            return
        spots = list(locate_tokens(value, issued))
        if spots:
            keys = tuple(dict.fromkeys(issued[s.token] for s in spots))
            t.keys = keys
            perturbs = {tok: probe[k] for tok, k in issued.items() if k in keys}
            t.result = self._solve(t, value, keys, perturbs)
            return
        if value == t.git:
            t.tried |= set(mine)
            if t.half:
                t.suspects = [k for k in t.suspects if k not in t.half]
                self._narrow(t)
            return
        # changed with no token: a flag flipped (or the field vanished with its object)
        t.suspects = t.half or [k for k in mine if not probe[k].tokens] or mine
        self._narrow(t)

    def _narrow(self, t: Target) -> None:
        if len(t.suspects) == 1:
            key = t.suspects[0]
            t.keys, t.half = (key,), []
            current = get_value(self.effective, key)
            if t.drift.op is Op.REMOVE:
                t.result = [(key, ABSENT)]
            elif not isinstance(t.drift.live, Mapping | list) and isinstance(current, type(t.drift.live)):
                t.result = [(key, t.drift.live)]
            else:
                t.result = f"{format_key(key)} decides the field, but not as its value"
            return
        if not t.suspects:
            t.half = []
            t.result = self._none(t)
            return
        t.half = t.suspects[: len(t.suspects) // 2]

    def _solve(self, t: Target, value: Any, keys: Sequence[ValuesPath], perturbs: Mapping[str, Perturb]) -> Edits | str:
        if t.drift.op is Op.REMOVE:
            return solve_remove(keys, effective=self.effective, whole=t.mode is Mode.TREE)
        if t.mode is Mode.TREE:
            return "a whole map or list item changed; only its fields can be traced"
        return solve_scalar(value, t.git, t.drift.live, perturbs=perturbs, effective=self.effective)

    def _none(self, t: Target) -> str:
        failing = [f"{format_key(k)} ({self.failed[k]})" for k in t.first if k in self.failed]
        if failing and not t.tried:
            return "perturbing the candidate values breaks the chart: " + "; ".join(failing[:3])
        if t.obj.raw is not None and lookup(t.obj.raw, t.path) != lookup(t.obj.body, t.path):
            return "set by the release's post-rendering (a postRenderers patch or label); no value controls it"
        refused = f" ({len(failing)} candidate values the chart refuses to change were not tried)" if failing else ""
        return f"set by {t.obj.template or 'the chart'}; no value controls it{refused}"


def _overlaps(a: ValuesPath, b: ValuesPath) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def trace(targets: list[Target], *, effective: Mapping[str, Any], schema: Schema, render: Render, budget: int) -> int:
    """Trace ``targets`` in place (``result`` of each set); returns the renders made (at most ``budget``)."""
    tracer = _Tracer(targets=targets, effective=effective, schema=schema, render=render, budget=budget)
    tracer.run()
    return tracer.renders
