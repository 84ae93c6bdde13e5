# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The mixed instances policy as the upgrade sees it (SPEC W2, issue 29 item 2)."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import mixed_instances
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError


def group(*overrides):
    return {"AutoScalingGroupName": "workers", "MixedInstancesPolicy": {"LaunchTemplate": {
        "LaunchTemplateSpecification": {"LaunchTemplateId": "lt-main", "Version": "3"}, "Overrides": list(overrides)}}}


def test_issue29_item2_overrides_of_the_group_s_own_template_follow_it():
    same = group({"InstanceType": "m5.large"},
                 {"InstanceType": "m5a.large", "LaunchTemplateSpecification": {"LaunchTemplateId": "lt-main"}})
    assert mixed_instances.own_configuration_overrides(same) == []
    mixed_instances.check_overrides_follow(same, True, "image_id")
    assert mixed_instances.own_configuration_overrides({"AutoScalingGroupName": "plain"}) == []


def test_issue29_item2_an_override_of_its_own_ami_is_judged_by_it_and_refused_for_a_new_version():
    own_ami = group({"InstanceType": "m5.large"}, {"InstanceType": "m6g.large", "ImageId": "ami-arm"})
    assert mixed_instances.override_images(None, own_ami) == {"m6g.large": "ami-arm"}  # no EC2 call needed
    mixed_instances.check_overrides_follow(own_ami, False, "use_current_launch_template")
    with pytest.raises(UpgradeError) as refused:
        mixed_instances.check_overrides_follow(own_ami, True, "kubernetes_version")
    assert refused.value.code == "MixedInstancesUnsupported"
    assert refused.value.details == dict(parameter="kubernetes_version", overrides=["m6g.large (AMI ami-arm)"])


@pytest.mark.parametrize("weights, refused", [((None, None), False), (("1", "1"), False), (("2", "2"), True),
                                              (("1", "8"), True)])
def test_issue29_item2_weights_other_than_one_are_refused(weights, refused):
    weighted = group(*({"InstanceType": t, "WeightedCapacity": w} if w else {"InstanceType": t}
                       for t, w in zip(("m5.large", "m5.2xlarge"), weights)))
    if not refused:
        mixed_instances.check_weights(weighted)
        return
    with pytest.raises(UpgradeError) as error:
        mixed_instances.check_weights(weighted)
    assert error.value.code == "MixedInstancesUnsupported" and "capacity units" in error.value.msg
