# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 29 item 4: a launch template whose ImageId is resolve:ssm:<parameter> was refused (the parameter was taken
for an AMI id that does not exist). Now the collection reads such a version through the AMI the parameter resolves
to (DescribeLaunchTemplateVersions ResolveAlias), judges the nodes by it, and the version it creates for the new
Kubernetes version names the target AMI's id. The sandbox resolves the parameter at each launch, as EC2 does
(moto_patches (p), test_contract_resolve_ssm.py)."""

from __future__ import annotations

import json

from asg_helpers import workers_asg
from nodegroup_state import nodegroup_nodes
from sandbox_helpers import REPO_ROOT, run_module, run_playbook

SCENARIO = "rolling"
PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"
# The public parameter EKS publishes for the recommended AL2023 AMI of Kubernetes 1.29 (EKS user guide, "Retrieve
# recommended Amazon Linux AMI IDs"); the group's nodes run that AMI.
PARAMETER = "/aws/service/eks/optimized-ami/1.29/amazon-linux-2023/x86_64/standard/recommended/image_id"


def ami(sandbox, kubernetes_version):
    [image] = sandbox.client("ec2").describe_images(Filters=[{"Name": "name", "Values": [
        "amazon-eks-node-al2023-x86_64-standard-%s-*" % kubernetes_version]}])["Images"]
    return image["ImageId"]


def test_issue29_a_template_whose_image_id_is_resolve_ssm_upgrades(sandbox, tmp_path):
    ec2, asg = sandbox.client("ec2"), workers_asg(sandbox)
    lt_id = asg["LaunchTemplate"]["LaunchTemplateId"]
    version = ec2.create_launch_template_version(
        LaunchTemplateId=lt_id, SourceVersion=asg["LaunchTemplate"]["Version"],
        LaunchTemplateData={"ImageId": "resolve:ssm:" + PARAMETER})["LaunchTemplateVersion"]["VersionNumber"]
    sandbox.client("autoscaling").update_auto_scaling_group(
        AutoScalingGroupName=asg["AutoScalingGroupName"],
        LaunchTemplate={"LaunchTemplateId": lt_id, "Version": str(version)})
    old, new = ami(sandbox, "1.29"), ami(sandbox, "1.30")
    args = {"cluster_name": "rolling", "nodegroup_name": "workers", "kubernetes_version": "1.30",
            "accept_owner_revert": True}

    # The plan says where the AMI came from, and that the new version names the target's id.
    plan = run_module(sandbox, "launch_template_version", args, check=True, diff=True)
    assert plan["failed"] is False, plan
    assert plan["diff"]["before"]["image_id"] == old and plan["diff"]["before"]["image_alias"] == "resolve:ssm:" + PARAMETER
    assert plan["diff"]["after"]["image_id"] == new and plan["diff"]["after"]["image_alias"] is None

    report_path = tmp_path / "report.json"
    result = run_playbook(sandbox, PLAYBOOK, {"cluster_name": "rolling", "nodegroup_name": "workers",
                                              "kubernetes_version": "1.30", "drain_timeout": 60, "post_drain_wait": 0,
                                              "upgrade_report_path": str(report_path)})
    assert result.returncode == 0, result.stdout[-5000:]
    report = json.loads(report_path.read_text())
    assert report["launch_template"]["previous_image_id"] == old and report["launch_template"]["image_id"] == new
    assert len(report["replaced_instances"]) == 6
    target = workers_asg(sandbox)["LaunchTemplate"]["Version"]
    [written] = ec2.describe_launch_template_versions(LaunchTemplateId=lt_id, Versions=[target])["LaunchTemplateVersions"]
    assert written["LaunchTemplateData"]["ImageId"] == new  # the AMI id written out, not a parameter
    instances = [i["InstanceId"] for i in workers_asg(sandbox)["Instances"]]
    described = ec2.describe_instances(InstanceIds=instances)["Reservations"]
    assert sorted(i["ImageId"] for r in described for i in r["Instances"]) == [new] * 6
    assert len(nodegroup_nodes(sandbox)) == 6 and sandbox.report()["pods_lost"] == []
