# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 29 item 3: an EKS managed node group whose launch template names its own AMI (amiType CUSTOM), now in the
sandbox (eks/creation.py custom_ami), is upgraded by the collection the way EKS takes it: a new version of the user's
launch template with the new AMI, passed as launch_template_version; a Kubernetes version or a release is refused
before any change, naming the option (SPEC K3, K5, U8)."""

from __future__ import annotations

import base64
import json

from eks_sandbox.bootstrap import OS_AL2023, render_user_data
from eks_sandbox.scenario.schema import generated_ami_id

from nodegroup_state import call_counts, calls_between, mutating_calls
from sandbox_helpers import REPO_ROOT, module_sandbox, run_module, run_playbook

OLD_AMI = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
NEW_AMI = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240201"
SCENARIO = {
    "name": "customami", "availability_zones": ["us-west-2a", "us-west-2b"],
    "amis": [{"name": OLD_AMI, "kubernetes_version": "1.29"}, {"name": NEW_AMI, "kubernetes_version": "1.30"}],
    "nodegroups": [{"name": "workers", "kind": "managed", "ami": OLD_AMI, "launch_template": "custom_ami",
                    "min_size": 2, "max_size": 4, "desired_capacity": 2}],
    "workloads": [{"kind": "Deployment", "name": "web", "replicas": 3}],
}
GROUP = {"cluster_name": "customami", "nodegroup_name": "workers"}
customami = module_sandbox(SCENARIO)


def new_template_version(sandbox, template_id, ami_id):
    """What the user does: a launch template version with the new AMI and the bootstrap for it."""
    cluster = sandbox.client("eks").describe_cluster(name="customami")["cluster"]
    user_data = render_user_data(
        OS_AL2023, cluster_name="customami", api_server_endpoint=cluster["endpoint"],
        certificate_authority=cluster["certificateAuthority"].get("data"), taints=[], max_pods=None,
        labels={"eks.amazonaws.com/nodegroup": "workers", "eks.amazonaws.com/nodegroup-image": ami_id})
    answer = sandbox.client("ec2").create_launch_template_version(
        LaunchTemplateId=template_id, SourceVersion="1",
        LaunchTemplateData={"ImageId": ami_id, "UserData": base64.b64encode(user_data.encode()).decode()})
    return answer["LaunchTemplateVersion"]["VersionNumber"]


def test_issue29_item3_a_custom_ami_managed_group_is_upgraded_through_a_launch_template_version(customami, tmp_path):
    before = call_counts(customami)
    refused = run_module(customami, "eks_nodegroup_update", dict(GROUP, kubernetes_version="1.30"))
    assert refused.get("failed") and refused["parameter"] == "kubernetes_version", refused
    assert "amiType CUSTOM" in refused["msg"]
    assert mutating_calls(calls_between(before, call_counts(customami))) == {}

    group = customami.client("eks").describe_nodegroup(clusterName="customami", nodegroupName="workers")["nodegroup"]
    version = new_template_version(customami, group["launchTemplate"]["id"], generated_ami_id(NEW_AMI))
    report_path = tmp_path / "report.json"
    result = run_playbook(customami, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml",
                          dict(GROUP, launch_template_version=version, upgrade_report_path=str(report_path)))
    assert result.returncode == 0, result.stdout[-3000:]
    report = json.loads(report_path.read_text())
    assert report["status"] == "succeeded" and report["kind"] == "managed", report
    nodegroup = report["eks_update"]["nodegroup"]
    assert (nodegroup["ami_type"], nodegroup["release_version"], nodegroup["launch_template"]["version"]) == \
        ("CUSTOM", generated_ami_id(NEW_AMI), str(version))
    assert report["pods_evicted"] >= 3 and customami.report()["pods_lost"] == []
