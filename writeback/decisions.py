"""What writeback decides about a difference, and why: ``Decision`` (with its groups), ``Rule``, ``Explanation``.

The drift engine decides each difference by an ordered list of rules (``writeback.drift.deciding``); the one that
decides names itself with a :class:`Rule`, and explains itself to a person with the text of an
:class:`Explanation`. Tests assert on the rule; reports print the text (and ``--explain`` the rule). Pure data.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Decision", "Explanation", "Rule"]


class Decision(enum.StrEnum):
    """What writeback does with one difference. Its groups are properties here, and nowhere else."""

    WRITEBACK = "writeback"
    IGNORE = "ignore"
    FLAG = "flag"
    NEW = "new"
    DELETED = "deleted"
    PENDING = "pending"  # Git head changed the field since the applied revision
    UNATTRIBUTED = "unattributed"  # no managedFields: no evidence of who made it (written back only by policy)

    @property
    def actionable(self) -> bool:
        """Drift a person should act on: ``--exit-code`` exits 1 on it (writeback, flag, unattributed, new,
        deleted)."""
        return self in _ACTIONABLE

    @property
    def written(self) -> bool:
        """Written into Git by a change set (writeback: standard review; flag: security review)."""
        return self in _WRITTEN

    @property
    def by_person(self) -> bool:
        """A person's change to a field (written back, flagged, or unattributed for want of evidence)."""
        return self in _BY_PERSON

    @property
    def whole_object(self) -> bool:
        """About a whole object, not a field: created live (new) or missing live (deleted); never patched."""
        return self in _WHOLE_OBJECT

    @property
    def held_back(self) -> bool:
        """A field deliberately not written back, listed as such in the PR (ignore, pending, unattributed)."""
        return not self.written and not self.whole_object


_WRITTEN = frozenset({Decision.WRITEBACK, Decision.FLAG})
_BY_PERSON = frozenset({Decision.WRITEBACK, Decision.FLAG, Decision.UNATTRIBUTED})
_WHOLE_OBJECT = frozenset({Decision.NEW, Decision.DELETED})
_ACTIONABLE = _BY_PERSON | _WHOLE_OBJECT


class Rule(enum.StrEnum):
    """The rule that decided a difference (``--explain`` names it)."""

    # Not drift at all: a default the API server filled in (dropped before the report).
    TABLE_DEFAULT = "table-default"  # the built-in table of the API server's defaults
    DRY_RUN_DEFAULT = "dry-run-default"  # a dry-run create of Git's manifest alone fills it in
    UNRECORDED_DEFAULT = "unrecorded-default"  # no manager is recorded for it (managedFields are)
    LAST_APPLIED_DEFAULT = "last-applied-default"  # not in the last-applied configuration its owner wrote
    # Not compared at all: the object is settled by its managers (drift/settling.py, before the rules)
    SETTLED_BY_MANAGERS = "settled-by-managers"  # every write is the GitOps applier's Apply or a controller's status
    # pending: Git changed it (or the whole object) after the applied revision
    PENDING_SYNC = "pending-sync"
    # ignore: out of the GitOps controller's hands, or ignored by configuration
    FLUX_ANNOTATION = "flux-annotation"  # Flux does not enforce or reconcile the object
    IGNORE_RULE = "ignore-rule"  # a configured ``ignore:`` rule
    ARGOCD_IGNORE_DIFFERENCES = "argocd-ignore-differences"  # the Application's spec.ignoreDifferences
    FLUX_IGNORE = "flux-ignore"  # a Kustomization's spec.ignore, a HelmRelease's spec.driftDetection.ignore
    # ignore: another writer
    CONTROLLER_OWNED = "controller-owned"  # a controller's field manager owns it
    GITOPS_OWNED = "gitops-owned"  # the GitOps controller's own manager owns it (a pending or failed sync)
    AUTOSCALED = "autoscaled"  # replicas of an object an HPA or a KEDA ScaledObject scales
    AGGREGATED = "aggregated"  # rules of an aggregated ClusterRole
    CA_INJECTED = "ca-injected"  # a caBundle a CA injector fills
    SERVICE_ACCOUNT_TOKEN = "service-account-token"  # the ServiceAccount admission plugin's token volume
    WEBHOOK_PRESET = "webhook-preset"  # what an enabled webhook preset (Istio, Linkerd, Vault) injects
    WEBHOOK_INJECTED = "webhook-injected"  # an added field no manager is recorded for
    BROUGHT_DEFAULT = "brought-default"  # filled in or allocated by the server because of a person's change
    # a person's change
    PERSON = "person"  # writeback
    SECURITY_FIELD = "security-field"  # flag: a security-sensitive field
    RBAC = "rbac"  # flag: RBAC rules, subjects or role of a Role/ClusterRole(Binding)
    IMAGE_REGISTRY = "image-registry"  # flag: an image moved to another registry, or one not allowed
    FLAG_PATH = "flag-path"  # flag: a configured flag path
    UNOWNED = "unowned"  # unattributed: no manager owns the field (Git's value not synced yet, a default, a scale)
    NO_MANAGED_FIELDS = "no-managed-fields"  # the live object carries none: who made it is unknown
    # whole objects
    MISSING_LIVE = "missing-live"  # deleted: Git declares it, the cluster lacks it
    CREATED_LIVE = "created-live"  # new: a person created it, Git does not declare it


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a rule decided as it did: the rule, and its words for a person."""

    rule: Rule
    text: str
