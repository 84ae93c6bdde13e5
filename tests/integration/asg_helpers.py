"""Sandbox set-up shared by the asg_surge, asg_instance_terminate and nodegroup_scale_restore tests."""

from __future__ import annotations

from typing import Any

from nodegroup_state import nodegroup_nodes, workers_asg

__all__ = ["NEW_AMI_NAME", "base_args", "workers_asg", "journal_tags", "asg_state", "point_asg_at_new_ami",
           "node_annotations"]

NEW_AMI_NAME = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240615"
JOURNAL_PREFIX = "eksops.nodegroup/"


def base_args(sandbox) -> dict[str, Any]:
    """Module arguments naming the sandbox's node group (a scenario's cluster is named after the scenario)."""
    return {"cluster_name": sandbox.scenario, "nodegroup_name": "workers"}


def journal_tags(asg) -> dict[str, str]:
    return {t["Key"][len(JOURNAL_PREFIX):]: t["Value"] for t in asg.get("Tags", []) if t["Key"].startswith(JOURNAL_PREFIX)}


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
