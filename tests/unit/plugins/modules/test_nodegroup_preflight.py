"""Preflight findings (SPEC Z1, Z2, Z3, D8) of nodegroup_preflight, from raw objects, no server."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.modules.nodegroup_preflight import preflight_findings


def deployment(name, replicas, namespace="default", tolerations=None):
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"tolerations": tolerations or []}}}}


def pdb(name, app, namespace="default", **spec):
    return {"metadata": {"name": name, "namespace": namespace},
            "spec": dict(spec, selector={"matchLabels": {"app": app}})}


def pod(name, app=None, namespace="default", owned=True, grace=30, prestop=None, mirror=False):
    metadata = {"name": name, "namespace": namespace, "labels": {"app": app} if app else {}}
    if owned:
        metadata["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "controller": True}]
    if mirror:
        metadata["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    container = {"name": "main"}
    if prestop is not None:
        container["lifecycle"] = {"preStop": {"exec": {"command": ["/bin/sh", "-c", prestop]}}}
    return {"metadata": metadata, "spec": {"terminationGracePeriodSeconds": grace, "containers": [container]}}


def checks(findings):
    return sorted((f["check"], f["namespace"], f["name"]) for f in findings)


def test_single_replica_and_blocking_pdb_are_reported_Z1_Z3():
    findings = preflight_findings([pod("billing-1", "billing", "payments")],
                                  [deployment("billing", 1, "payments")],
                                  [pdb("billing", "billing", "payments", minAvailable=1)])
    assert checks(findings) == [("blocking_pdb", "payments", "billing"), ("single_replica", "payments", "billing")]


def test_replicated_deployment_with_a_loose_pdb_is_fine_Z1():
    findings = preflight_findings([pod("web-1", "web")], [deployment("web", 4)], [pdb("web", "web", minAvailable=3)])
    assert findings == []


def test_deployment_without_pdb_is_reported_Z1():
    findings = preflight_findings([pod("cache-1", "cache")], [deployment("cache", 2)], [])
    assert checks(findings) == [("no_pdb", "default", "cache")]


def test_min_available_equal_to_replicas_or_max_unavailable_zero_blocks_Z3():
    pods = [pod("a-1", "a"), pod("b-1", "b"), pod("c-1", "c")]
    deployments = [deployment("a", 3), deployment("b", 3), deployment("c", 3)]
    budgets = [pdb("a", "a", minAvailable=3), pdb("b", "b", maxUnavailable=0), pdb("c", "c", minAvailable="100%")]
    assert checks(preflight_findings(pods, deployments, budgets)) == [
        ("blocking_pdb", "default", "a"), ("blocking_pdb", "default", "b"), ("blocking_pdb", "default", "c")]


def test_several_pdbs_on_one_deployment_are_reported_Z3():
    findings = preflight_findings([pod("web-1", "web")], [deployment("web", 4)],
                                  [pdb("web", "web", minAvailable=1), pdb("web-2", "web", maxUnavailable=1)])
    assert checks(findings) == [("multiple_pdbs", "default", "web")]


def test_tolerate_all_deployment_is_reported_Z3():
    findings = preflight_findings([pod("agent-1", "agent")],
                                  [deployment("agent", 2, tolerations=[{"operator": "Exists"}])],
                                  [pdb("agent", "agent", maxUnavailable=1)])
    assert checks(findings) == [("tolerates_all", "default", "agent")]


def test_prestop_sleep_not_shorter_than_grace_is_reported_Z2():
    findings = preflight_findings([pod("web-1", "web", grace=10, prestop="sleep 10"),
                                   pod("web-2", "web", grace=30, prestop="sleep 10")],
                                  [deployment("web", 2)], [pdb("web", "web", maxUnavailable=1)])
    assert checks(findings) == [("prestop_exceeds_grace", "default", "web-1")]


def test_pod_without_controller_is_reported_but_mirror_pods_are_not_D8():
    findings = preflight_findings([pod("debug", owned=False), pod("kube-proxy", owned=False, mirror=True)], [], [])
    assert checks(findings) == [("unmanaged_pod", "default", "debug")]


def test_deployments_without_pods_on_the_node_group_are_ignored():
    findings = preflight_findings([pod("web-1", "web")], [deployment("web", 2), deployment("other", 1)],
                                  [pdb("web", "web", maxUnavailable=1)])
    assert findings == []
