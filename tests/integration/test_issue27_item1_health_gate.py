# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 1 on the sandbox, through the upgrade playbook: a Deployment pinned by a node label that a person
gave the old nodes only (kubectl label node) cannot come back on the new nodes, so the soak's health gate stops the
run with HealthGateFailed naming it and its Pending pod before the next batch, and the journal records it; once the
pin is lifted, a rerun with a canary first judges it again, then soaks and gates each batch, and the report's
batches and picture show the soaks. The surge strategy soaks and
gates each step, its first step the canary."""

from __future__ import annotations

import json

from sandbox_helpers import REPO_ROOT, module_sandbox, run_playbook, wait_for
from scenarios import two_az_workers

# Four old nodes over two AZs, so that the canary (one per AZ) leaves batches after it.
GATED = dict(two_az_workers("gated", 10, [{"kind": "Deployment", "name": "web", "replicas": 2}]))
GATED["nodegroups"] = [dict(GATED["nodegroups"][0], desired_capacity=4)]
gated_sandbox = module_sandbox(GATED)
# What a person applies (kubectl apply): replicas that run only on nodes labelled disk=old-ssd, one on each old node
# (the scheduler spreads a workload's replicas), so the first batch already moves one.
PINNED = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "pinned", "namespace": "default"},
          "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "pinned"}},
                   "template": {"metadata": {"labels": {"app": "pinned"}},
                                "spec": {"nodeSelector": {"disk": "old-ssd"},
                                         "containers": [{"name": "app", "image": "public.ecr.aws/nginx/nginx:1.27"}]}}}}


def upgrade(sandbox, report_path, **extra):
    return run_playbook(sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", dict({
        "cluster_name": "gated", "nodegroup_name": "workers", "kubernetes_version": "1.30", "drain_timeout": 30,
        "post_drain_wait": 1, "upgrade_report_path": str(report_path)}, **extra))


def pinned_pods(core):
    return [p for p in core.list_namespaced_pod("default").items
            if p.metadata.name.startswith("pinned-") and p.metadata.deletion_timestamp is None]


def test_issue27_item1_a_workload_that_does_not_come_back_stops_the_run_and_a_rerun_soaks_each_batch(
        gated_sandbox, tmp_path):
    core, apps = gated_sandbox.core_v1(), gated_sandbox.apps_v1()
    for node in core.list_node().items:
        core.patch_node(node.metadata.name, {"metadata": {"labels": {"disk": "old-ssd"}}})
    apps.create_namespaced_deployment("default", PINNED)
    wait_for(lambda: len([p for p in pinned_pods(core) if p.status.phase == "Running"]) == 4, 30,
             "the pinned pods running")

    failed_path = tmp_path / "failed.json"
    failed = upgrade(gated_sandbox, failed_path, batch_soak_seconds=1, health_gate_timeout=8)
    assert failed.returncode != 0, failed.stdout[-3000:]
    report = json.loads(failed_path.read_text())
    assert (report["error"]["phase"], report["error"]["code"]) == ("upgrade", "HealthGateFailed"), report["error"]
    assert "Deployment default/pinned (available 3/4; pending: default/pinned-" in report["error"]["msg"]
    assert "nodes are available" in report["error"]["msg"]
    assert "it goes on with the old nodes left, soaking and gating as before" in report["error"]["resume"]
    # It stopped after the first batch, whose gate failed: no other batch started.
    [batch] = report["batches"]
    assert batch["gate_failed_at"] and batch["gate_passed_at"] is None and batch["soak_seconds"] == 1
    assert "Deployment default/pinned" in batch["gate_workloads"]
    assert "health gate failed at" in failed.stdout
    # The journal remembers what failed, for the rerun to judge first.
    [group] = gated_sandbox.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"]
    assert {t["Key"]: t["Value"] for t in group["Tags"]}["eksops.nodegroup/health_gate"] == "Deployment default/pinned"

    # The remedy: the workload no longer needs the old nodes' label.
    apps.patch_namespaced_deployment("pinned", "default", {"spec": {"template": {"spec": {"nodeSelector": None}}}})
    passed_path = tmp_path / "passed.json"
    passed = upgrade(gated_sandbox, passed_path, batch_soak_seconds=2, canary=True, canary_soak_seconds=3)
    assert passed.returncode == 0, passed.stdout[-3000:]
    report = json.loads(passed_path.read_text())
    assert report["status"] == "succeeded" and report["batches"]
    canary = [b for b in report["batches"] if b["canary"]]
    assert canary and [b["soak_seconds"] for b in canary][-1] == 3
    zones = [b["availability_zones"][i] for b in canary for i in b["instance_ids"]]
    assert len(zones) == len(set(zones)), "the canary is one old node per zone"
    for batch in report["batches"]:
        # Each soak began once the batch's instances were gone and lasted as asked; the gate then passed.
        assert batch["terminated_at"] <= batch["soak_started_at"] < batch["soak_ended_at"] <= batch["gate_passed_at"]
        soak = next(w["seconds"] for w in batch["waited_on"] if w["what"] == "soak")
        assert soak >= batch["soak_seconds"] - 0.1, batch
    assert "canary soak of 3 s started at" in passed.stdout and "health gate passed at" in passed.stdout
    assert ("an earlier run's health gate failed on 1 workload(s): judged again (up to 600 s) before any batch "
            "starts: Deployment default/pinned") in passed.stdout
    assert "the health gate an earlier run failed passed after" in passed.stdout
    picture = (tmp_path / "passed.svg").read_text()
    assert picture.count('class="soak"') >= len(report["batches"])
    sandbox_report = gated_sandbox.report()
    assert sandbox_report["pods_lost"] == [] and sandbox_report["pdb_violations"] == []


SURGE = dict(two_az_workers("surgegate", 10, [{"kind": "Deployment", "name": "web", "replicas": 3}]))
SURGE["nodegroups"] = [dict(SURGE["nodegroups"][0], desired_capacity=4)]
surge_sandbox = module_sandbox(SURGE)


def test_issue27_item1_the_surge_strategy_soaks_and_gates_each_step_its_first_the_canary(surge_sandbox, tmp_path):
    report_path = tmp_path / "surge.json"
    result = run_playbook(surge_sandbox, REPO_ROOT / "playbooks" / "surge_upgrade.yml", {
        "cluster_name": "surgegate", "nodegroup_name": "workers", "kubernetes_version": "1.30", "max_surge": 2,
        "drain_timeout": 30, "post_drain_wait": 1, "batch_soak_seconds": 1, "canary": True,
        "canary_soak_seconds": 2, "upgrade_report_path": str(report_path)})
    assert result.returncode == 0, result.stdout[-3000:]
    report = json.loads(report_path.read_text())
    steps = report["batches"]
    assert [step["phase"] for step in steps] == ["surge_upgrade"] * len(steps) and len(steps) >= 2
    assert [(step["canary"], step["soak_seconds"]) for step in steps] == [(True, 2)] + [(False, 1)] * (len(steps) - 1)
    for step in steps:
        assert step["terminated_at"] <= step["soak_started_at"] < step["soak_ended_at"] <= step["gate_passed_at"]
    assert "step 1/%d: canary soak of 2 s started at" % len(steps) in result.stdout
