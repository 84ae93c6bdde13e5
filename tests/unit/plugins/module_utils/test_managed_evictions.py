# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 29 item 3: the evictions EKS makes while it updates a managed node group, counted from the cluster: the pods
kube-apiserver marks DisruptionTarget / EvictionByEvictionAPI on the group's nodes, and the nodes replaced."""

from __future__ import annotations

import time

from ansible_collections.eksops.nodegroup.plugins.module_utils.managed.evictions import (
    EvictionWatch,
    eviction_counts,
    evicted_on,
)

from ..fakes import FakeCluster, api_error, make_pod, node

GROUP_LABEL = {"eks.amazonaws.com/nodegroup": "workers"}


def evicting(pod, reason="EvictionByEvictionAPI"):
    """``pod`` as kube-apiserver's eviction handler leaves it before deleting it."""
    pod = dict(pod, status=dict(pod["status"], conditions=[
        {"type": "DisruptionTarget", "status": "True", "reason": reason, "message": "Eviction API: evicting"}]))
    pod["metadata"] = dict(pod["metadata"], deletionTimestamp="2024-06-01T12:00:00Z")
    return pod


def test_only_the_eviction_api_s_condition_counts():
    assert evicted_on(evicting(make_pod("web-1", node="n1"))) == "n1"
    assert evicted_on(evicting(make_pod("web-1", node="n1"), reason="DeletionByTaintManager")) is None
    assert evicted_on(make_pod("web-1", node="n1", deleting_for=3)) is None


def test_evictions_from_the_group_s_nodes_and_the_nodes_replaced():
    counts = eviction_counts({"u1": "old-1", "u2": "old-1", "u3": "surge-1", "u4": "other-group"},
                             group_nodes={"old-1", "old-2", "surge-1", "new-1"}, nodes_at_start={"old-1", "old-2"},
                             nodes_at_end={"new-1"})
    assert counts == dict(pods_evicted=3, nodes_replaced=["old-1", "old-2"])


def wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_issue29_item3_the_evictions_eks_made_are_counted_from_the_cluster():
    cluster = FakeCluster(nodes=[node("old-1", labels=GROUP_LABEL), node("other", labels={})],
                          pods=[make_pod("web-1", node="old-1"), make_pod("db-1", node="other")])
    watch = EvictionWatch(cluster, "workers", log=lambda line: None)
    watch.start()
    # EKS's update: a surge node joins, the old node's pod is evicted (then recreated on the new node and evicted
    # again when the surge node is drained), the old node goes; a pod of another group is evicted meanwhile.
    cluster.store.put(node("surge-1", labels=GROUP_LABEL))
    cluster.pods.put(evicting(make_pod("web-1", node="old-1")))
    cluster.pods.delete(("default", "web-1"))
    cluster.pods.put(evicting(make_pod("web-2", node="surge-1", uid="uid-web-2")))
    cluster.pods.put(evicting(make_pod("db-1", node="other")))
    cluster.store.delete(("", "old-1"))
    expected = dict(pods_evicted=2, nodes_replaced=["old-1"], counted=True)
    wait_until(lambda: watch.counts() == expected)
    assert watch.stop() == expected
    assert cluster.verbs("watch", "nodes") and not cluster.verbs("evict")


def test_a_watch_refused_leaves_the_count_not_counted_and_says_why():
    cluster = FakeCluster(nodes=[node("old-1", labels=GROUP_LABEL)])
    cluster.pods.faults["list"].append(api_error(403, body={"kind": "Status", "code": 403, "message": "forbidden"}))
    heard = []
    watch = EvictionWatch(cluster, "workers", log=heard.append)
    watch.start()
    assert watch.stop()["counted"] is False
    assert heard and heard[0].startswith("cannot watch the cluster to count EKS's evictions")
