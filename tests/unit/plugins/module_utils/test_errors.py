# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""UpgradeError and the U8 codes (SPEC U8)."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils import errors
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError, invalid_parameter, not_found


def test_u8_codes_are_the_eks_names():
    assert errors.NODE_CREATION_FAILURE == "NodeCreationFailure"
    assert errors.POD_EVICTION_FAILURE == "PodEvictionFailure"
    assert errors.ASG_INSTANCE_LAUNCH_FAILURES == "AsgInstanceLaunchFailures"
    assert errors.INSTANCE_LIMIT_EXCEEDED == "InstanceLimitExceeded"
    assert errors.INSUFFICIENT_FREE_ADDRESSES == "InsufficientFreeAddresses"
    assert errors.ACCESS_DENIED == "AccessDenied"
    assert errors.CLUSTER_UNREACHABLE == "ClusterUnreachable"
    assert errors.UPGRADE_TARGET_CONFLICT == "UpgradeTargetConflict"
    assert errors.INVALID_PARAMETER == "InvalidParameter"
    assert errors.NOT_FOUND == "ResourceNotFound"
    assert errors.AUTOSCALER_ACTIVE == "ClusterAutoscalerActive"


def test_upgrade_error_carries_code_msg_and_details():
    err = UpgradeError(errors.POD_EVICTION_FAILURE, "pods stayed", node="ip-10-0-1-1", pods=["default/web-1"])
    assert err.code == "PodEvictionFailure"
    assert err.msg == "pods stayed"
    assert err.details == {"node": "ip-10-0-1-1", "pods": ["default/web-1"]}
    assert str(err) == "PodEvictionFailure: pods stayed"
    with pytest.raises(UpgradeError) as raised:
        raise err
    assert raised.value is err


def test_helpers_name_the_parameter():
    assert invalid_parameter("max_surge", "bad", value=30).details == {"parameter": "max_surge", "value": 30}
    assert invalid_parameter("max_surge", "bad").code == errors.INVALID_PARAMETER
    missing = not_found("asg_name", "gone")
    assert (missing.code, missing.details) == (errors.NOT_FOUND, {"parameter": "asg_name"})
