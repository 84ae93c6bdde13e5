# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the launch_template_version / nodegroup_info / access tests compare before and after a run: the AWS state
a module may change, and the calls the sandbox saw; and the evictions the cluster shows while runs go on."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import kubernetes

# AWS actions that change something; a read-only or failed run must make none of them.
MUTATING_ACTIONS = frozenset([
    "CreateLaunchTemplateVersion", "ModifyLaunchTemplate", "UpdateAutoScalingGroup", "SetDesiredCapacity",
    "CreateOrUpdateTags", "DeleteTags", "TerminateInstanceInAutoScalingGroup", "SuspendProcesses",
    "ResumeProcesses", "SetInstanceProtection",
])
# EKS's own update API: a change, though not to what EKS owns (the managed node group tests tell them apart).
EKS_WRITE_ACTIONS = frozenset(["UpdateNodegroupVersion", "UpdateNodegroupConfig"])


# (state dir, node group) -> the Auto Scaling group the sandbox seeded for it; it never changes while it runs.
_ASG_NAMES: dict[tuple[str, str], str] = {}


def asg_name_of(sandbox, nodegroup: str = "workers") -> str:
    """The name of the node group's Auto Scaling group, as the sandbox report gives it. Each tool names its
    group its own way (SPEC K1: terraform `workers-<26 digits>`, eksctl `eksctl-<c>-nodegroup-<ng>-NodeGroup-<x>`,
    EKS `eks-<ng>-<uuid>`), so the tests never guess it from a name or from one kind's tags."""
    key = (str(sandbox.state_dir), nodegroup)
    if key not in _ASG_NAMES:
        _ASG_NAMES[key] = sandbox.report()["nodegroups"][nodegroup]["asg"]["name"]
    return _ASG_NAMES[key]


def workers_asg(sandbox, nodegroup: str = "workers") -> dict[str, Any]:
    """The node group's Auto Scaling group as DescribeAutoScalingGroups gives it now."""
    [asg] = sandbox.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[asg_name_of(sandbox, nodegroup)])["AutoScalingGroups"]
    return asg


def instance_id_of(node) -> str | None:
    """The EC2 instance id in a node's spec.providerID (aws:///<az>/<instance-id>), or None."""
    provider_id = node.spec.provider_id if node.spec is not None else None
    return provider_id.rsplit("/", 1)[-1] if provider_id else None


def nodegroup_nodes(sandbox, nodegroup: str = "workers") -> list:
    """The nodes of the node group's instances (those of its Auto Scaling group), matched by spec.providerID
    (SPEC K2): self-managed nodes carry no node-group label, or another tool's (SPEC K1)."""
    instance_ids = {i["InstanceId"] for i in workers_asg(sandbox, nodegroup)["Instances"]}
    return [node for node in sandbox.core_v1().list_node().items if instance_id_of(node) in instance_ids]


def aws_state(sandbox) -> dict[str, Any]:
    """The node group's ASG (sizes, LT version, tags, instances) and its launch template's versions."""
    ec2 = sandbox.client("ec2")
    asg = workers_asg(sandbox)
    lt_id = asg["LaunchTemplate"]["LaunchTemplateId"]
    template = ec2.describe_launch_templates(LaunchTemplateIds=[lt_id])["LaunchTemplates"][0]
    versions = ec2.describe_launch_template_versions(LaunchTemplateId=lt_id)["LaunchTemplateVersions"]
    return {
        "asg": {key: asg[key] for key in ("MinSize", "MaxSize", "DesiredCapacity", "LaunchTemplate")},
        "tags": sorted((t["Key"], t["Value"]) for t in asg.get("Tags", [])),
        "instances": sorted(i["InstanceId"] for i in asg["Instances"]),
        "default_version": template["DefaultVersionNumber"],
        "versions": sorted((v["VersionNumber"], v["LaunchTemplateData"].get("ImageId")) for v in versions),
    }


def image_id_by_name(sandbox, name: str) -> str:
    [image] = sandbox.client("ec2").describe_images(Filters=[{"Name": "name", "Values": [name]}])["Images"]
    return image["ImageId"]


def call_counts(sandbox) -> dict[str, int]:
    """AWS calls by "<action> <error code or OK>", and Kubernetes requests by "<agent> <verb> <resource> <status>"."""
    report = sandbox.report()
    return {**report["aws_calls"], **report["k8s_requests"]}


def calls_between(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key, 0)}


def mutating_calls(calls: dict[str, int]) -> dict[str, int]:
    return {key: count for key, count in calls.items() if key.split(" ", 1)[0] in MUTATING_ACTIONS}


def changes_by_the_collection(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """Mutating AWS calls, and Kubernetes requests other than reads made by the collection's modules, between two
    call_counts: what "nothing was changed" must leave at {}."""
    calls = calls_between(before, after)
    writes = {key: count for key, count in calls.items()
              if key.startswith("eksops.nodegroup") and key.split(" ")[1] not in ("get", "list", "watch")}
    eks = {key: count for key, count in calls.items() if key.split(" ", 1)[0] in EKS_WRITE_ACTIONS}
    return {**mutating_calls(calls), **eks, **writes}


@contextlib.contextmanager
def sandbox_env(sandbox, **overrides: str):
    """Run modules with these environment variables changed (an empty string unsets one for the module)."""
    saved = dict(sandbox.env)
    sandbox.env.update(overrides)
    try:
        yield
    finally:
        sandbox.env.clear()
        sandbox.env.update(saved)


def count_evictions(sandbox, stop):
    """{pod uid: node} of every pod a watch sees marked by the Eviction API, until ``stop`` is set."""
    core = sandbox.core_v1()
    version = core.list_pod_for_all_namespaces().metadata.resource_version
    seen = {}

    def follow():
        while not stop.is_set():
            with contextlib.suppress(Exception):
                for event in kubernetes.watch.Watch().stream(core.list_pod_for_all_namespaces, resource_version=version,
                                                             timeout_seconds=5):
                    pod = event["object"]
                    if any(c.type == "DisruptionTarget" and c.reason == "EvictionByEvictionAPI"
                           for c in pod.status.conditions or []):
                        seen.setdefault(pod.metadata.uid, pod.spec.node_name)
    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    return seen, thread
