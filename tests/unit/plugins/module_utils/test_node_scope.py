# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 10 item 24: nodegroup_name is a scope; which nodes are a node group's (node_scope), pure."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from ansible_collections.eksops.nodegroup.plugins.module_utils.members import node_scope
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.discovery import NodegroupRef

GROUP = NodegroupRef("demo", "workers", "self_managed", {
    "AutoScalingGroupName": "workers-asg", "Instances": [{"InstanceId": "i-1"}, {"InstanceId": "i-2"}]})


def test_issue10_item24_nodes_of_the_groups_instances_are_inside():
    assert node_scope.outside_nodegroup(GROUP, {"a": "i-1", "b": "i-2"}) == []


def test_issue10_item24_an_instance_the_group_is_terminating_is_still_inside():
    """Dropped from the group's list while it terminates, EC2 still tags it with the group: not another group's."""
    tags = {"i-3": {node_scope.ASG_NAME_TAG: "workers-asg"}}
    assert node_scope.outside_nodegroup(GROUP, {"c": "i-3"}, tags) == []


def test_issue10_item24_nodes_elsewhere_are_named_with_where_they_belong():
    tags = {"i-9": {node_scope.ASG_NAME_TAG: "other-asg"}}
    outside = node_scope.outside_nodegroup(
        GROUP, {"a": "i-1", "x": "i-9", "y": "i-8", "z": None}, tags,
        node_labels={"x": {"eks.amazonaws.com/nodegroup": "other"}, "y": {"alpha.eksctl.io/nodegroup-name": "spot"}})
    assert outside == [dict(node="x", instance_id="i-9", asg_name="other-asg", nodegroup="other"),
                       dict(node="y", instance_id="i-8", asg_name=None, nodegroup="spot"),
                       dict(node="z", instance_id=None, asg_name=None, nodegroup=None)]
    message = node_scope.outside_message(GROUP, outside, "names", "cordon or drain")
    assert message.startswith("names names nodes outside node group workers of cluster demo (nodegroup_name; Auto "
                              "Scaling group workers-asg): node x (instance i-9) is in Auto Scaling group other-asg "
                              "(its node is labelled node group other); node y (instance i-8) is in no Auto Scaling "
                              "group EC2 knows of (its node is labelled node group spot); node z has no EC2 instance")
    assert message.endswith("Nothing was changed.")


def test_issue10_item24_check_asks_ec2_only_about_instances_the_group_does_not_list():
    ec2 = boto3.client("ec2", region_name="us-west-2", aws_access_key_id="AK", aws_secret_access_key="SK")
    asked = []

    def aws(service):
        asked.append(service)
        return ec2
    node_scope.check_nodes_in_nodegroup(GROUP, {"a": "i-1"}, aws=aws, parameter="names")
    assert asked == []
    with Stubber(ec2) as stubber:
        stubber.add_response("describe_instances", {"Reservations": [{"Instances": [{"InstanceId": "i-9", "Tags": [
            {"Key": node_scope.ASG_NAME_TAG, "Value": "other-asg"}]}]}]}, expected_params={"InstanceIds": ["i-9"]})
        with pytest.raises(UpgradeError) as raised:
            node_scope.check_nodes_in_nodegroup(GROUP, {"a": "i-1", "x": "i-9"}, aws=aws, parameter="instance_ids")
        stubber.assert_no_pending_responses()
    assert asked == ["ec2"]
    assert (raised.value.code, raised.value.details["parameter"]) == ("InvalidParameter", "instance_ids")
    assert raised.value.details["outside"][0]["asg_name"] == "other-asg"
