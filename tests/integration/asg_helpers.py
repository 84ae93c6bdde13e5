# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sandbox set-up shared by the asg_surge, asg_instance_terminate and nodegroup_scale_restore tests."""

from __future__ import annotations

from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.journal import Journal, write_journal
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.lease import LEASE_TAG
from nodegroup_state import nodegroup_nodes, workers_asg

__all__ = ["NEW_AMI_NAME", "base_args", "workers_asg", "journal_tags", "edit_journal", "asg_state",
           "point_asg_at_new_ami", "node_annotations"]

NEW_AMI_NAME = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"


def base_args(sandbox) -> dict[str, Any]:
    """Module arguments naming the sandbox's node group (a scenario's cluster is named after the scenario)."""
    return {"cluster_name": sandbox.scenario, "nodegroup_name": "workers"}


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(value)
    if isinstance(value, dict):
        return ",".join("%s=%d" % item for item in value.items())
    return str(value)


def journal_tags(asg) -> dict[str, str]:
    """What the group's eksops.nodegroup/* tags record: each set journal field as its text, and "lease"."""
    tags = {t["Key"]: t["Value"] for t in asg.get("Tags", [])}
    journal = Journal.from_tags(tags)
    fields = {} if journal is None else {k: _text(v) for k, v in journal.to_dict().items() if v is not None}
    if LEASE_TAG in tags:
        fields["lease"] = tags[LEASE_TAG]
    return fields


def edit_journal(sandbox, **changes: Any) -> None:
    """The group's journal changed as another run (or a person) would change it; a new one if it has none."""
    asg = workers_asg(sandbox)
    journal = Journal.from_tags(asg.get("Tags"))
    write_journal(sandbox.client("autoscaling"), asg["AutoScalingGroupName"],
                  (journal or Journal()).replace(**changes), previous=journal or Journal())


def asg_state(sandbox) -> dict[str, Any]:
    """What a module may change on the ASG: sizes, suspended processes, journal, instances."""
    asg = workers_asg(sandbox)
    return {"min": asg["MinSize"], "max": asg["MaxSize"], "desired": asg["DesiredCapacity"],
            "suspended": sorted(p["ProcessName"] for p in asg.get("SuspendedProcesses", [])),
            "journal": journal_tags(asg),
            "instances": sorted(i["InstanceId"] for i in asg["Instances"])}


def point_asg_at_new_ami(sandbox, ami_name: str = NEW_AMI_NAME) -> dict[str, Any]:
    """A new launch template version with the given AMI, and the ASG pointed at it (what the setup phase does)."""
    ec2 = sandbox.client("ec2")
    asg = workers_asg(sandbox)
    lt_id = asg["LaunchTemplate"]["LaunchTemplateId"]
    [image] = ec2.describe_images(Filters=[{"Name": "name", "Values": [ami_name]}])["Images"]
    current = ec2.describe_launch_template_versions(LaunchTemplateId=lt_id, Versions=["$Latest"])[
        "LaunchTemplateVersions"][0]
    data = dict(current["LaunchTemplateData"], ImageId=image["ImageId"])
    created = ec2.create_launch_template_version(LaunchTemplateId=lt_id, LaunchTemplateData=data)
    version = created["LaunchTemplateVersion"]["VersionNumber"]
    sandbox.client("autoscaling").update_auto_scaling_group(
        AutoScalingGroupName=asg["AutoScalingGroupName"],
        LaunchTemplate={"LaunchTemplateId": lt_id, "Version": str(version)})
    return {"launch_template_id": lt_id, "launch_template_version": version, "image_id": image["ImageId"],
            "asg_name": asg["AutoScalingGroupName"]}


def node_annotations(sandbox) -> dict[str, dict[str, str]]:
    """Annotations of the workers group's nodes (its instances' nodes, by spec.providerID)."""
    return {n.metadata.name: dict(n.metadata.annotations or {}) for n in nodegroup_nodes(sandbox)}
