# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an eviction (or DELETE) answer means, and when to retry it (D13)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
import random
import re

from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import (
    backoff_delay,
    retry_after_seconds,
    status_body,
)


# kubectl retries a PDB refusal every 5 s (D13).
PDB_RETRY_SECONDS = 5.0
MULTIPLE_PDB_MESSAGE = "more than one poddisruptionbudget"
# Any other 500 is usually passing (etcd, a webhook timing out): retried this many times with backoff before it
# fails the pod, as D13's "other errors" do; one such answer failed a whole upgrade in the fault soak.
SERVER_ERROR_RETRIES = 4
_PDB_NAME_IN_CAUSE = re.compile(r"disruption budget (\S+?)[\s.,]")


ACCEPTED = "accepted"            # 2xx: the pod is being deleted; wait for it
GONE = "gone"                    # 404, or 409 on the UID precondition: the original pod is gone
PDB_BLOCKED = "pdb_blocked"      # 429 from a PodDisruptionBudget: retry every 5 s
THROTTLED = "throttled"          # 429 with Retry-After (API priority and fairness): retry after it
MULTIPLE_PDBS = "multiple_pdbs"  # 500: the pod has several PDBs; eviction can never succeed
# 502/503/504 or a connection error: retry (the UID precondition makes a repeat after an eviction the server
# did accept a 404/409).
TRANSIENT = "transient"
TERMINATING_NAMESPACE = "terminating_namespace"  # 403: namespace is being deleted; the pod goes with it
FAILED = "failed"                # anything else: this pod fails, the others go on

RETRY_OUTCOMES = (PDB_BLOCKED, THROTTLED, TRANSIENT)


class EvictionOutcome:
    def __init__(self, kind: str, message: str = "", retry_in: float | None = None, pdb: str | None = None) -> None:
        self.kind = kind
        self.message = message
        self.retry_in = retry_in
        self.pdb = pdb

    def __repr__(self) -> str:
        return "EvictionOutcome(%r, %r, retry_in=%r, pdb=%r)" % (self.kind, self.message, self.retry_in, self.pdb)


def classify_eviction(status: int | None, headers: Mapping[str, str] | None = None,
                      body: dict[str, Any] | str | bytes | None = None, attempt: int = 0, rng: Any = random,
                      server_errors: int = 0, pdb_retry_seconds: float = PDB_RETRY_SECONDS,
                      server_error_retries: int = SERVER_ERROR_RETRIES) -> EvictionOutcome:
    """D13: what an eviction (or delete) response means, and when to retry.

    ``status`` is the HTTP status (None for a transport error), ``body`` the Status object (dict or JSON),
    ``server_errors`` how many plain 500s this pod's removal got before.
    """
    if status is not None and 200 <= status < 300:
        return EvictionOutcome(ACCEPTED)
    parsed = status_body(body)
    message = parsed.get("message") or ""
    causes = (parsed.get("details") or {}).get("causes") or []
    if status is None:
        return EvictionOutcome(TRANSIENT, message or "connection error", retry_in=backoff_delay(attempt, rng=rng))
    if status in (404, 409):
        return EvictionOutcome(GONE, message)
    if status == 429:
        retry_after = retry_after_seconds(headers)
        budget_causes = [c for c in causes if c.get("type") == "DisruptionBudget"]
        pdb = None
        for cause in budget_causes:
            match = _PDB_NAME_IN_CAUSE.search((cause.get("message") or "") + " ")
            if match:
                pdb = match.group(1)
                break
        detail = "; ".join(c.get("message") for c in budget_causes if c.get("message"))
        text = "%s (%s)" % (message, detail) if detail else message
        if retry_after:
            kind = PDB_BLOCKED if budget_causes else THROTTLED
            return EvictionOutcome(kind, text, retry_in=retry_after * (1.0 + rng.uniform(0.0, 0.2)), pdb=pdb)
        # A PDB refusal carries no Retry-After: retry every 5 s with jitter, as kubectl does.
        return EvictionOutcome(PDB_BLOCKED, text, retry_in=pdb_retry_seconds * rng.uniform(0.8, 1.2), pdb=pdb)
    if status == 500 and MULTIPLE_PDB_MESSAGE in message.lower():
        return EvictionOutcome(MULTIPLE_PDBS, message)
    if status == 500 and server_errors < server_error_retries:
        return EvictionOutcome(TRANSIENT, message or "HTTP 500", retry_in=backoff_delay(server_errors, rng=rng))
    if status == 403 and any(c.get("type") == "NamespaceTerminating" for c in causes):
        return EvictionOutcome(TERMINATING_NAMESPACE, message)
    if status in (502, 503, 504):
        retry_after = retry_after_seconds(headers)
        delay = retry_after if retry_after else backoff_delay(attempt, rng=rng)
        return EvictionOutcome(TRANSIENT, message or "HTTP %d" % status, retry_in=delay)
    return EvictionOutcome(FAILED, "HTTP %s: %s" % (status, message or "error"))
