# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What an eviction answer means and when it is retried (_drain/eviction.py, SPEC D13). The engine's handling of
each answer, end to end, is in test_node_drain.py."""

from __future__ import annotations

import json
import random

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain import eviction
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.eviction import (
    ACCEPTED,
    FAILED,
    GONE,
    MULTIPLE_PDBS,
    PDB_BLOCKED,
    TERMINATING_NAMESPACE,
    THROTTLED,
    TRANSIENT,
    classify_eviction,
)

from ...fakes import PDB_STATUS


@pytest.mark.parametrize("status, headers, body, kind, pdb", [
    (201, None, None, ACCEPTED, None),
    (404, None, {"message": "not found"}, GONE, None),
    (409, None, {"message": "Precondition failed: UID in precondition"}, GONE, None),   # D11
    (429, {}, PDB_STATUS, PDB_BLOCKED, "web-pdb"),
    (429, {"Retry-After": "3"}, {"message": "too many requests"}, THROTTLED, None),
    (429, {"Retry-After": "10"}, PDB_STATUS, PDB_BLOCKED, "web-pdb"),  # E4: PDB not yet observed
    (500, None, {"message": "This pod has more than one PodDisruptionBudget, which the eviction subresource "
                            "does not support."}, MULTIPLE_PDBS, None),
    (500, None, {"message": "etcd timeout"}, TRANSIENT, None),
    (503, None, {"message": "unavailable"}, TRANSIENT, None),
    (None, None, "connection reset", TRANSIENT, None),
    (403, None, {"message": "forbidden", "details": {"causes": [{"type": "NamespaceTerminating"}]}},
     TERMINATING_NAMESPACE, None),
    (403, None, {"message": "forbidden"}, FAILED, None),
    (422, None, "not json", FAILED, None),
])
def test_D13_classification(status, headers, body, kind, pdb):
    outcome = classify_eviction(status, headers, json.dumps(body) if isinstance(body, dict) else body)
    assert outcome.kind == kind
    assert outcome.pdb == pdb


def test_D13_a_plain_500_is_retried_a_few_times_then_fails_the_pod():
    retried = [classify_eviction(500, None, '{"message": "etcd timeout"}', server_errors=n)
               for n in range(eviction.SERVER_ERROR_RETRIES)]
    assert all(o.kind == TRANSIENT for o in retried)
    assert [o.retry_in > 0 for o in retried] == [True] * eviction.SERVER_ERROR_RETRIES
    last = classify_eviction(500, None, '{"message": "etcd timeout"}', server_errors=eviction.SERVER_ERROR_RETRIES)
    assert last.kind == FAILED and "etcd timeout" in last.message


def test_D13_pdb_refusal_retries_every_5s_with_jitter():
    assert eviction.PDB_RETRY_SECONDS == 5.0
    delays = [classify_eviction(429, {}, PDB_STATUS, rng=random.Random(seed)).retry_in for seed in range(30)]
    assert all(4.0 <= d <= 6.0 for d in delays) and len(set(delays)) > 1


def test_D13_retry_after_is_honoured_never_shortened():
    delays = [classify_eviction(429, {"Retry-After": "3"}, "{}").retry_in for dummy in range(30)]
    assert all(3.0 <= d <= 3.6 for d in delays)
