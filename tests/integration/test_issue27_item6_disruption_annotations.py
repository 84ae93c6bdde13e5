# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 6 on the sandbox, pods and nodes annotated by the kubernetes client as a person would (kubectl
annotate): a pod annotated karpenter.sh/do-not-disrupt=true refuses its node's drain (PodEvictionFailure naming the
pod and the annotation), nothing on the node is evicted; with force the pod is evicted, with a warning. A node so
annotated refuses the moves of its pods the same way."""

from __future__ import annotations

from sandbox_helpers import module_sandbox, run_module
from scenarios import two_az_workers

annotated_sandbox = module_sandbox(two_az_workers("annotated", 4, [{"kind": "Deployment", "name": "web", "replicas": 2}]))
DRAIN = {"post_drain_wait": 1, "delete_options": {"wait_timeout": 60}}


def test_issue27_item6_a_pod_that_asks_not_to_be_disrupted_is_evicted_only_with_force(annotated_sandbox):
    core = annotated_sandbox.core_v1()
    pod = next(p for p in core.list_namespaced_pod("default").items if p.metadata.name.startswith("web-"))
    core.patch_namespaced_pod(pod.metadata.name, "default",
                              {"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "true"}}})
    node, ref = pod.spec.node_name, "default/%s" % pod.metadata.name

    refused = run_module(annotated_sandbox, "node_drain", dict(DRAIN, name=node))
    assert refused["failed"] and refused["code"] == "PodEvictionFailure"
    assert ref in refused["msg"] and "karpenter.sh/do-not-disrupt=true" in refused["msg"]
    assert refused["drain"]["nodes"][node]["evicted"] == []
    assert core.read_namespaced_pod(pod.metadata.name, "default").metadata.deletion_timestamp is None

    forced = run_module(annotated_sandbox, "node_drain",
                        dict(DRAIN, name=node, delete_options={"wait_timeout": 60, "force": True}))
    assert not forced["failed"], forced.get("msg")
    assert ref in forced["drain"]["nodes"][node]["evicted"]
    assert any("karpenter.sh/do-not-disrupt=true" in warning for warning in forced["drain"]["nodes"][node]["warnings"])


def test_issue27_item6_a_node_that_asks_not_to_be_disrupted_keeps_its_pods_without_force(annotated_sandbox):
    core = annotated_sandbox.core_v1()
    busy = set(p.spec.node_name for p in core.list_namespaced_pod("default").items
               if p.metadata.name.startswith("web-") and p.metadata.deletion_timestamp is None)
    node = next(n.metadata.name for n in core.list_node().items
                if n.metadata.name in busy and not n.spec.unschedulable)
    core.patch_node(node, {"metadata": {"annotations": {"karpenter.sh/do-not-disrupt": "true"}}})

    refused = run_module(annotated_sandbox, "node_drain", dict(DRAIN, name=node))
    assert refused["failed"] and refused["code"] == "PodEvictionFailure"
    assert "on a node annotated karpenter.sh/do-not-disrupt=true" in refused["msg"]
    assert refused["drain"]["nodes"][node]["evicted"] == []

    forced = run_module(annotated_sandbox, "node_drain",
                        dict(DRAIN, name=node, delete_options={"wait_timeout": 60, "force": True}))
    assert not forced["failed"], forced.get("msg")
    assert forced["drain"]["nodes"][node]["evicted"]
