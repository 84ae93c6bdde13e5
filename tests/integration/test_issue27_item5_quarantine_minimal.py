# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 5 on the sandbox with update_strategy minimal (SPEC U7), in a file of its own so that its run and
test_issue27_item5_quarantine.py's go on separate test workers: a node held by its budget is kept and given back to
the scheduler, the other replaced, the group's size right."""

from __future__ import annotations

import json

from nodegroup_state import workers_asg
from sandbox_helpers import REPO_ROOT, module_sandbox, run_playbook
from test_issue27_item5_quarantine import DRAIN, SCENARIO, pods_of, quarantined_nodes

# Two nodes, billing's single replica held by its budget, web's two replicas free to move.
minimal_sandbox = module_sandbox(dict(SCENARIO, name="minimal_quarantine", nodegroups=[
    dict(SCENARIO["nodegroups"][0], desired_capacity=2)], workloads=[
    {"kind": "Deployment", "name": "web", "replicas": 2, "pdb": {"max_unavailable": 1}}] + SCENARIO["workloads"][1:]))


def test_issue27_item5_with_update_strategy_minimal_a_held_node_is_kept_and_only_the_others_replaced(
        minimal_sandbox, tmp_path):
    """SPEC U7 (minimal: each batch's old node is terminated first, its replacement gates the next batch): a drain
    that timed out terminates nothing, so no replacement is launched for the held node; the other node is
    terminated and replaced as usual. The held node is given back to the scheduler (uncordoned, labelled): left
    cordoned, the other node's drain found nowhere to put web's second pod, its budget held that node too, and the
    run stopped with both nodes cordoned. The group keeps its desired capacity, every instance in
    it live: the held one and the other's replacement; web's pods run, nothing lost, no budget broken."""
    sandbox = minimal_sandbox
    held_node = pods_of(sandbox, "billing-")[0].spec.node_name
    before = dict((i["InstanceId"], i) for i in workers_asg(sandbox)["Instances"])
    result = run_playbook(sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", dict(
        DRAIN, cluster_name="minimal_quarantine", nodegroup_name="workers", kubernetes_version="1.30",
        update_strategy="minimal", max_quarantined_nodes=1, upgrade_report_path=str(tmp_path / "minimal.json")))
    report = json.loads((tmp_path / "minimal.json").read_text())
    assert result.returncode != 0, result.stdout[-3000:]
    assert (report["error"]["code"], report["error"]["phase"]) == ("NodesQuarantined", "upgrade"), report["error"]
    [entry] = report["quarantined"]
    assert (entry["node"], entry["retried"], entry["pod_disruption_budgets"]) == (held_node, True, ["default/billing"])
    other = [i for i in before if i != entry["instance_id"]]
    assert report["replaced_instances"] == other
    asg = workers_asg(sandbox)
    live = [i["InstanceId"] for i in asg["Instances"] if i["LifecycleState"] in ("InService", "Pending")]
    assert (asg["DesiredCapacity"], len(live)) == (2, 2)
    assert entry["instance_id"] in live and other[0] not in live
    state = sandbox.report()
    nodes = dict((n["name"], n) for n in state["nodegroups"]["workers"]["nodes"])
    assert not nodes[held_node]["unschedulable"] and quarantined_nodes(sandbox) == [held_node]
    assert [n["unschedulable"] for name, n in nodes.items() if name != held_node] == [False]
    assert len([p for p in pods_of(sandbox, "web-") if p.spec.node_name]) == 2
    assert state["pods_lost"] == [] and state["pdb_violations"] == []
