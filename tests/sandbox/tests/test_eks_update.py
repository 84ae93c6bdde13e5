# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""UpdateNodegroupVersion as EKS runs it ("Managed node update behavior": setup, scale up, upgrade, scale down),
driven by a real client (boto3) against a running sandbox, every response checked against botocore's model."""

from __future__ import annotations

import base64
import contextlib
import threading

import kubernetes
import pytest
from botocore.exceptions import ClientError

from harness import AMIS, EKS_CLUSTER, NEW_AMI, OLD_AMI, client, running, valid, wait_for, wait_for_update
from eks_sandbox.bootstrap import OS_AL2023, render_user_data
from eks_sandbox.kube.testing import scenario
from eks_sandbox.scenario.schema import generated_ami_id

CLUSTER = "eks"
NEW_AMI_ID = generated_ami_id(NEW_AMI)
NEW_RELEASE = "1.30.0-20240201"
EXCLUDE_LB = "node.kubernetes.io/exclude-from-external-load-balancers"


def start_update(eks, nodegroup, **kwargs):
    return valid(eks, "UpdateNodegroupVersion", eks.update_nodegroup_version(
        clusterName=CLUSTER, nodegroupName=nodegroup, **kwargs))["update"]


def describe(eks, nodegroup):
    return valid(eks, "DescribeNodegroup", eks.describe_nodegroup(clusterName=CLUSTER, nodegroupName=nodegroup))[
        "nodegroup"]


def asg(sandbox, nodegroup):
    name = describe(client(sandbox, "eks"), nodegroup)["resources"]["autoScalingGroups"][0]["name"]
    return client(sandbox, "autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[name])[
        "AutoScalingGroups"][0]


def watch_marked_nodes(sandbox):
    """The names of the nodes a Kubernetes watch sees cordoned and labelled out of external load balancers (filled
    by a background watch until the sandbox stops)."""
    core = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(sandbox.kubeconfig_path)))
    marked = set()
    version = core.list_node().metadata.resource_version

    def follow():
        with contextlib.suppress(Exception):  # the stream ends when the sandbox stops
            for event in kubernetes.watch.Watch().stream(core.list_node, resource_version=version,
                                                         timeout_seconds=60):
                node = event["object"]
                if node.spec.unschedulable and (node.metadata.labels or {}).get(EXCLUDE_LB) == "true":
                    marked.add(node.metadata.name)
    threading.Thread(target=follow, daemon=True).start()
    return marked


def settled_nodes(sandbox, nodegroup, count):
    """The node group's nodes once exactly `count` remain and all run the new AMI."""
    def nodes():
        found = sandbox.report()["nodegroups"][nodegroup]["nodes"]
        return found if len(found) == count and all(n["ami"] == NEW_AMI_ID and n["ready"] for n in found) else None
    return wait_for(nodes)


def test_an_update_surges_drains_every_old_node_and_scales_back(tmp_path):
    loaded = scenario(
        **EKS_CLUSTER,
        nodegroups=[{"name": "workers", "kind": "managed", "ami": OLD_AMI, "min_size": 1, "max_size": 4,
                     "desired_capacity": 3},
                    {"name": "custom", "kind": "managed", "launch_template": "custom", "ami": OLD_AMI,
                     "availability_zones": ["us-west-2a"], "min_size": 1, "max_size": 2, "desired_capacity": 1}],
        workloads=[{"kind": "Deployment", "name": "web", "replicas": 4, "nodegroup": "workers", "pdb": {"min_available": 3}},
                   {"kind": "DaemonSet", "name": "agent"}],
        # the fast timings' 5 s drain budget is too tight for three PDB-paced drains when both cores are busy
        timings={"eks_drain_timeout_seconds": 60.0})
    with running(loaded) as sandbox:
        eks, ec2 = client(sandbox, "eks"), client(sandbox, "ec2")
        old_nodes = {n["name"] for n in sandbox.report()["nodegroups"]["workers"]["nodes"]}
        marked = watch_marked_nodes(sandbox)
        update = start_update(eks, "workers")
        assert (update["type"], update["status"], update["errors"]) == ("VersionUpdate", "InProgress", [])
        assert update["params"] == [{"type": "Version", "value": "1.30"},
                                    {"type": "ReleaseVersion", "value": NEW_RELEASE}]
        with pytest.raises(ClientError) as busy:
            eks.update_nodegroup_version(clusterName=CLUSTER, nodegroupName="workers")
        assert busy.value.response["Error"]["Code"] == "ResourceInUseException"
        assert busy.value.response["ResponseMetadata"]["HTTPStatusCode"] == 409
        assert update["id"] in busy.value.response["Error"]["Message"]
        assert describe(eks, "workers")["status"] == "UPDATING"
        # A custom launch template's node group is updated to a new version of that template, at the same time.
        template_id = describe(eks, "custom")["launchTemplate"]["id"]
        ec2.create_launch_template_version(LaunchTemplateId=template_id, SourceVersion="1",
                                           LaunchTemplateData={"InstanceType": "m5.xlarge"})
        custom_update = start_update(eks, "custom", launchTemplate={"id": template_id, "version": "2"})
        assert custom_update["params"][2:] == [{"type": "LaunchTemplateName", "value": "custom-custom"},
                                               {"type": "LaunchTemplateVersion", "value": "2"}]

        peak = {"max": 0, "desired": 0}

        def watch():
            group = asg(sandbox, "workers")
            peak["max"] = max(peak["max"], group["MaxSize"])
            peak["desired"] = max(peak["desired"], group["DesiredCapacity"])
        done = wait_for_update(eks, CLUSTER, "workers", update["id"], timeout=120.0, watch=watch)
        assert (done["status"], done["errors"]) == ("Successful", [])
        # Scale up by max(2 x the ASG's 3 AZs, maxUnavailable 1) = 6, then back to the original size; every old
        # node was cordoned and taken out of load balancers before it went.
        assert peak == {"max": 4 + 6, "desired": 3 + 6}
        assert old_nodes <= marked
        group = asg(sandbox, "workers")
        assert (group["MinSize"], group["MaxSize"], group["DesiredCapacity"]) == (1, 4, 3)
        nodegroup = describe(eks, "workers")
        assert (nodegroup["status"], nodegroup["version"], nodegroup["releaseVersion"]) == (
            "ACTIVE", "1.30", NEW_RELEASE)
        for node in settled_nodes(sandbox, "workers", 3):
            assert node["labels"]["eks.amazonaws.com/nodegroup-image"] == NEW_AMI_ID
        report = sandbox.report()
        assert report["pdb_violations"] == [] and report["pods_lost"] == []
        assert report["controller"]["errors"] == {}
        assert report["nodegroups"]["workers"]["eks"]["releaseVersion"] == NEW_RELEASE
        events = [e for e in report["events"] if e.get("update_id") == update["id"]]
        assert [e["phase"] for e in events if e["kind"] == "eks_update_phase"] == [
            "setup", "scale_up", "upgrade", "scale_down", "done"]
        assert sum(e["kind"] == "eks_instance_terminated" and not e["decrement"] for e in events) == 3
        assert sum(e["kind"] == "eks_instance_terminated" and e["decrement"] for e in events) == 6

        custom_done = wait_for_update(eks, CLUSTER, "custom", custom_update["id"])
        assert custom_done["status"] == "Successful"
        assert describe(eks, "custom")["launchTemplate"]["version"] == "2"
        labels = settled_nodes(sandbox, "custom", 1)[0]["labels"]
        assert labels["eks.amazonaws.com/sourceLaunchTemplateVersion"] == "2"
        assert labels["eks.amazonaws.com/sourceLaunchTemplateId"] == template_id
        assert valid(eks, "ListUpdates", eks.list_updates(name=CLUSTER, nodegroupName="workers"))["updateIds"] == [
            update["id"]]
        with pytest.raises(ClientError) as unknown:
            eks.describe_update(name=CLUSTER, updateId="00000000-0000-0000-0000-000000000000",
                                nodegroupName="workers")
        assert unknown.value.response["Error"]["Code"] == "ResourceNotFoundException"


def test_a_pdb_that_never_allows_an_eviction_fails_the_update_unless_forced():
    loaded = scenario(
        **EKS_CLUSTER,
        nodegroups=[{"name": "workers", "kind": "managed", "ami": OLD_AMI,
                     "availability_zones": ["us-west-2a", "us-west-2b"], "min_size": 1, "max_size": 2,
                     "desired_capacity": 2}],
        workloads=[{"kind": "Deployment", "name": "billing", "replicas": 1, "nodegroup": "workers",
                    "pdb": {"min_available": 1}}])
    with running(loaded) as sandbox:
        eks = client(sandbox, "eks")
        core = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(sandbox.kubeconfig_path)))
        [billing] = core.list_namespaced_pod("default", label_selector="app=billing").items
        failed = wait_for_update(eks, CLUSTER, "workers", start_update(eks, "workers")["id"])
        assert failed["status"] == "Failed"
        [error] = failed["errors"]
        assert error["errorCode"] == "PodEvictionFailure"
        assert error["errorMessage"] == ("Reached max retries while trying to evict pods from nodes in node group "
                                         "workers")
        assert error["resourceIds"] == [billing.spec.node_name]
        nodegroup = describe(eks, "workers")
        assert (nodegroup["status"], nodegroup["releaseVersion"]) == ("ACTIVE", "1.29.0-20240101")
        assert sandbox.report()["pods_lost"] == []

        forced = wait_for_update(eks, CLUSTER, "workers", start_update(eks, "workers", force=True)["id"])
        assert (forced["status"], forced["errors"]) == ("Successful", [])
        assert describe(eks, "workers")["releaseVersion"] == NEW_RELEASE
        assert sandbox.report()["pods_lost"] == []


def test_the_minimal_strategy_replaces_nodes_without_surge():
    loaded = scenario(
        **EKS_CLUSTER,
        nodegroups=[{"name": "gpu", "kind": "managed", "ami": OLD_AMI, "availability_zones": ["us-west-2a", "us-west-2b"],
                     "min_size": 1, "max_size": 2, "desired_capacity": 2,
                     "update_config": {"update_strategy": "MINIMAL"}}])
    with running(loaded) as sandbox:
        eks = client(sandbox, "eks")
        peak = {"max": 0, "instances": 0}

        def watch():
            group = asg(sandbox, "gpu")
            live = [i for i in group["Instances"] if i["LifecycleState"] in ("Pending", "InService")]
            peak["max"], peak["instances"] = max(peak["max"], group["MaxSize"]), max(peak["instances"], len(live))
        done = wait_for_update(eks, CLUSTER, "gpu", start_update(eks, "gpu")["id"], watch=watch)
        assert done["status"] == "Successful"
        assert peak == {"max": 2, "instances": 2}
        settled_nodes(sandbox, "gpu", 2)


def test_new_nodes_that_never_become_ready_fail_the_update_with_node_creation_failure():
    amis = [AMIS[0], {**AMIS[1], "never_ready": True}]
    cluster = {key: value for key, value in EKS_CLUSTER.items() if key != "amis"}
    loaded = scenario(
        **cluster, amis=amis,
        nodegroups=[{"name": "workers", "kind": "managed", "ami": OLD_AMI, "availability_zones": ["us-west-2a"],
                     "min_size": 1, "max_size": 1, "desired_capacity": 1}],
        timings={"eks_node_ready_timeout_seconds": 1.0})
    with running(loaded) as sandbox:
        eks = client(sandbox, "eks")
        failed = wait_for_update(eks, CLUSTER, "workers", start_update(eks, "workers")["id"])
        assert failed["status"] == "Failed"
        [error] = failed["errors"]
        assert error["errorCode"] == "NodeCreationFailure"
        assert error["errorMessage"] == ("Couldn't proceed with upgrade process as new nodes are not joining the "
                                         "node group.")
        assert error["resourceIds"] and all(i.startswith("i-") for i in error["resourceIds"])
        assert describe(eks, "workers")["releaseVersion"] == "1.29.0-20240101"


BR_OLD = "bottlerocket-aws-k8s-1.30-x86_64-v1.20.3-5d9ac849"
BR_NEW = "bottlerocket-aws-k8s-1.30-x86_64-v1.26.2-360b7a38"


def one_node_group_on(family, old, new, name):
    """A cluster on 1.30 with two AMIs of ``family`` for it (``new`` the recommended one) and a one-node managed
    node group ``name`` on ``old``."""
    amis = [{"name": old, "kubernetes_version": "1.30", "family": family, "recommended": False},
            {"name": new, "kubernetes_version": "1.30", "family": family, "recommended": True}]
    return scenario(name="eks", cluster={"name": "eks"}, amis=amis,
                    nodegroups=[{"name": name, "kind": "managed", "ami": old, "availability_zones": ["us-west-2a"],
                                 "min_size": 1, "max_size": 1, "desired_capacity": 1}])


def test_a_bottlerocket_group_moves_to_the_release_ssm_publishes_as_image_version():
    """Bottlerocket: the releaseVersion is the Bottlerocket version, SSM's .../latest/image_version names the newest
    one (eksctl's managed upgrade reads it), and UpdateNodegroupVersion with the group's own version and no
    releaseVersion moves the group to it ("the latest available AMI for that version")."""
    with running(one_node_group_on("bottlerocket/x86_64", BR_OLD, BR_NEW, "br")) as sandbox:
        eks, ssm = client(sandbox, "eks"), client(sandbox, "ssm")
        parameter = valid(ssm, "GetParameter", ssm.get_parameter(
            Name="/aws/service/bottlerocket/aws-k8s-1.30/x86_64/latest/image_version"))["Parameter"]
        assert parameter["Value"] == "1.26.2-360b7a38"
        group = describe(eks, "br")
        assert (group["amiType"], group["version"], group["releaseVersion"]) == \
            ("BOTTLEROCKET_x86_64", "1.30", "1.20.3-5d9ac849")
        done = wait_for_update(eks, CLUSTER, "br", start_update(eks, "br", version="1.30")["id"])
        assert done["status"] == "Successful", done
        assert {"type": "ReleaseVersion", "value": "1.26.2-360b7a38"} in done["params"]
        assert describe(eks, "br")["releaseVersion"] == parameter["Value"]


def test_a_custom_ami_group_moves_to_the_ami_of_a_new_launch_template_version():
    """A managed node group whose launch template names its AMI ("Customizing managed nodes with launch templates",
    Specifying an AMI): amiType CUSTOM, releaseVersion the AMI id, no version or releaseVersion in an update, and
    the AMI of a new launch template version (with the bootstrap the user writes, labels as eksctl's example)."""
    loaded = scenario(**EKS_CLUSTER, nodegroups=[
        {"name": "custom", "kind": "managed", "ami": OLD_AMI, "launch_template": "custom_ami",
         "availability_zones": ["us-west-2a"], "min_size": 1, "max_size": 2, "desired_capacity": 1}])
    with running(loaded) as sandbox:
        eks, ec2 = client(sandbox, "eks"), client(sandbox, "ec2")
        group = describe(eks, "custom")
        old_ami_id = generated_ami_id(OLD_AMI)
        assert (group["amiType"], group["releaseVersion"], group["launchTemplate"]["version"]) == \
            ("CUSTOM", old_ami_id, "1")
        template_id = group["launchTemplate"]["id"]
        [version] = ec2.describe_launch_template_versions(LaunchTemplateId=template_id)["LaunchTemplateVersions"]
        assert version["LaunchTemplateData"]["ImageId"] == old_ami_id
        with pytest.raises(ClientError) as refused:
            start_update(eks, "custom", version="1.30")
        assert refused.value.response["Error"]["Code"] == "InvalidParameterException"

        cluster = eks.describe_cluster(name=CLUSTER)["cluster"]
        user_data = render_user_data(
            OS_AL2023, cluster_name=CLUSTER, api_server_endpoint=cluster["endpoint"],
            certificate_authority=cluster["certificateAuthority"].get("data"), taints=[], max_pods=None,
            labels={"eks.amazonaws.com/nodegroup": "custom", "eks.amazonaws.com/nodegroup-image": NEW_AMI_ID})
        ec2.create_launch_template_version(
            LaunchTemplateId=template_id, SourceVersion="1",
            LaunchTemplateData={"ImageId": NEW_AMI_ID, "UserData": base64.b64encode(user_data.encode()).decode()})
        update = start_update(eks, "custom", launchTemplate={"id": template_id, "version": "2"})
        assert {"type": "ReleaseVersion", "value": NEW_AMI_ID} in update["params"]
        done = wait_for_update(eks, CLUSTER, "custom", update["id"])
        assert done["status"] == "Successful", done
        group = describe(eks, "custom")
        assert (group["releaseVersion"], group["launchTemplate"]["version"], group["amiType"]) == \
            (NEW_AMI_ID, "2", "CUSTOM")
        [node] = settled_nodes(sandbox, "custom", 1)
        assert node["labels"]["eks.amazonaws.com/nodegroup-image"] == NEW_AMI_ID


WIN_OLD = "Windows_Server-2022-English-Core-EKS_Optimized-1.30-2024.05.14"
WIN_NEW = "Windows_Server-2022-English-Core-EKS_Optimized-1.30-2024.06.13"


def test_a_windows_group_runs_windows_nodes_and_moves_to_the_ami_ssm_names():
    """A Windows managed node group: amiType WINDOWS_CORE_2022_x86_64, releaseVersion "<k8s>-<date>" ("Retrieve
    Windows AMI version information"), nodes labelled kubernetes.io/os=windows by their kubelet from the PowerShell
    bootstrap EKS writes; SSM names the newest AMI's id only, and its name ends with the release that
    UpdateNodegroupVersion with the group's own version moves to."""
    with running(one_node_group_on("windows/core-2022", WIN_OLD, WIN_NEW, "win")) as sandbox:
        eks, ssm, ec2 = client(sandbox, "eks"), client(sandbox, "ssm"), client(sandbox, "ec2")
        group = describe(eks, "win")
        assert (group["amiType"], group["version"], group["releaseVersion"]) == \
            ("WINDOWS_CORE_2022_x86_64", "1.30", "1.30-2024.05.14")
        core = kubernetes.client.CoreV1Api(kubernetes.config.new_client_from_config(str(sandbox.kubeconfig_path)))
        [node] = wait_for(lambda: core.list_node(label_selector="eks.amazonaws.com/nodegroup=win").items)
        assert (node.metadata.labels["kubernetes.io/os"], node.status.node_info.operating_system) == \
            ("windows", "windows")
        parameter = valid(ssm, "GetParameter", ssm.get_parameter(
            Name="/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.30/image_id"))
        [image] = ec2.describe_images(ImageIds=[parameter["Parameter"]["Value"]])["Images"]
        assert (image["Name"], image["Platform"]) == (WIN_NEW, "windows")
        done = wait_for_update(eks, CLUSTER, "win", start_update(eks, "win", version="1.30")["id"])
        assert done["status"] == "Successful", done
        assert describe(eks, "win")["releaseVersion"] == "1.30-2024.06.13"
