# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The eks_nodegroups inventory plugin run in the test's process against in-process moto, and a fleet to list: two
regions, clusters with node groups of every kind, each built with its own tool's tags (moto_nodegroup)."""

from __future__ import annotations

import importlib

import pytest
import yaml
from moto import mock_aws

from ..moto_nodegroup import asg_tag_list, eksctl_tags, self_managed_tags, CLOUDFORMATION, TERRAFORM

try:
    from ansible.module_utils import _internal
except ImportError:  # ansible-core < 2.19
    _internal = None

PLUGIN = "eksops.nodegroup.eks_nodegroups"
ROLE = "arn:aws:iam::123456789012:role/eks"
AMI_NAME = "amazon-eks-node-al2023-x86_64-standard-%s-v20240615"


class Fleet:
    """Clusters and node groups in moto, by region."""

    def cluster(self, region, name, version="1.30"):
        return _regional("eks", region).create_cluster(
            name=name, roleArn=ROLE, version=version, resourcesVpcConfig={"subnetIds": []})["cluster"]

    def managed(self, region, cluster, name, tags, version="1.29"):
        return _regional("eks", region).create_nodegroup(
            clusterName=cluster, nodegroupName=name, nodeRole=ROLE, subnets=["subnet-1"], tags=tags,
            version=version, releaseVersion="%s.0-20240615" % version)["nodegroup"]

    def launch_template(self, region, name, kubernetes_version="1.29"):
        """A launch template of an EKS-optimized AMI of ``kubernetes_version``: (template id, AMI id)."""
        ec2 = _regional("ec2", region)
        image = ec2.register_image(Name=AMI_NAME % kubernetes_version)["ImageId"]
        template = ec2.create_launch_template(LaunchTemplateName=name, LaunchTemplateData=dict(ImageId=image))
        return template["LaunchTemplate"]["LaunchTemplateId"], image

    def self_managed(self, region, asg_name, tags, lt_id, version="$Latest"):
        _regional("autoscaling", region).create_auto_scaling_group(
            AutoScalingGroupName=asg_name, MinSize=0, MaxSize=3, DesiredCapacity=0,
            LaunchTemplate=dict(LaunchTemplateId=lt_id, Version=version), AvailabilityZones=[region + "a"],
            Tags=asg_tag_list(asg_name, tags))


def _regional(service, region):
    from .. import moto_nodegroup

    return moto_nodegroup._reused_session(dict(moto_nodegroup.AWS_PARAMS, region=region)).client(service)


def build_fleet():
    """us-west-2: prod-a (managed system, ring canary; terraform workers, ring 1), prod-b (eksctl batch, ring 2;
    CloudFormation web, no ring), dev-x (managed dev); us-east-1: prod-c (managed api, ring 1); and an Auto Scaling
    group of no cluster."""
    fleet = Fleet()
    for name in ("prod-a", "prod-b", "dev-x"):
        fleet.cluster("us-west-2", name)
    fleet.managed("us-west-2", "prod-a", "system", {"upgrade-ring": "canary", "team": "platform"})
    fleet.managed("us-west-2", "dev-x", "dev", {"upgrade-ring": "canary"})
    lt_id, fleet.workers_ami = fleet.launch_template("us-west-2", "workers-lt", "1.29")
    fleet.self_managed("us-west-2", "workers-2024061512000012340000000b",
                       dict(self_managed_tags(TERRAFORM, "prod-a", "workers"), **{"upgrade-ring": "1"}), lt_id)
    batch_lt, _image = fleet.launch_template("us-west-2", "batch-lt", "1.28")
    fleet.self_managed("us-west-2", "eksctl-prod-b-nodegroup-batch-NodeGroup-1K3ZQ8Y2M7P4W",
                       dict(eksctl_tags("prod-b", "batch"), **{"upgrade-ring": "2"}), batch_lt, version="1")
    fleet.self_managed("us-west-2", "prod-b-web-NodeGroup-9X4T2B7QK1LD",
                       dict(self_managed_tags(CLOUDFORMATION, "prod-b", "web"), team="payments"), batch_lt,
                       version="$Default")
    fleet.self_managed("us-west-2", "bastion", {"Name": "bastion"}, lt_id)
    fleet.cluster("us-east-1", "prod-c", version="1.31")
    fleet.managed("us-east-1", "prod-c", "api", {"upgrade-ring": "1"}, version="1.30")
    return fleet


@pytest.fixture
def fleet():
    with mock_aws():
        yield build_fleet()


@pytest.fixture(scope="module")
def plugin_module():
    """The plugin's module, its options registered with Ansible's configuration as the plugin loader registers them.
    Importing Ansible's controller flips the modules' is_controller flag: put back after (see action/conftest.py)."""
    was = getattr(_internal, "is_controller", None)
    try:
        module = importlib.import_module("ansible_collections.eksops.nodegroup.plugins.inventory.eks_nodegroups")
        loader = importlib.import_module("ansible.plugins.loader")
        loader.inventory_loader._load_config_defs(PLUGIN, module, module.__file__)
        yield module
    finally:
        if _internal is not None:
            _internal.is_controller = was


@pytest.fixture
def inventory(plugin_module, tmp_path, monkeypatch, fleet):
    """``inventory(config, cache=True, data=None)``: parse an eks_nodegroups.yml of ``config`` (the plugin option
    added) into ``data`` (a new InventoryData); returns it and the plugin, whose ``requests`` counts its AWS requests."""
    from ansible.inventory.data import InventoryData
    from ansible.parsing.dataloader import DataLoader

    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "us-west-2")

    def parse(config, cache=True, data=None):
        path = tmp_path / "fleet.eks_nodegroups.yml"
        path.write_text(yaml.safe_dump(dict(config, plugin=PLUGIN)))
        plugin = plugin_module.InventoryModule()
        plugin._load_name = PLUGIN
        plugin._redirected_names = [PLUGIN]  # what the plugin loader sets (ansible-core 2.16 reads it)
        assert plugin.verify_file(str(path))
        data = data or InventoryData()
        plugin.parse(data, DataLoader(), str(path), cache=cache)
        if getattr(plugin, "_cache", None):  # as InventoryManager does after a parse
            plugin.update_cache_if_changed()
        return data, plugin

    return parse
