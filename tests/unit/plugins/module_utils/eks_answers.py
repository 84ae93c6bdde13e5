# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""DescribeNodegroup and DescribeUpdate answers as botocore returns them, and the eks_nodegroup_update options, for
the tests of managed_target and managed_update."""

from __future__ import annotations

import datetime

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError

CLUSTER = "demo"
LT_ID = "lt-0123456789abcdef0"


def nodegroup(**overrides):
    """A DescribeNodegroup answer: an ACTIVE AL2023 group on 1.30 without a launch template of its own."""
    answer = dict(nodegroupName="workers", clusterName=CLUSTER, version="1.30", releaseVersion="1.30.4-20240917",
                  status="ACTIVE", amiType="AL2023_x86_64_STANDARD",
                  updateConfig={"maxUnavailable": 1, "updateStrategy": "DEFAULT"},
                  resources={"autoScalingGroups": [{"name": "eks-workers-0c1"}]})
    answer.update(overrides)
    return answer


def with_custom_lt(ami_type="AL2023_x86_64_STANDARD", lt_version="3", **overrides):
    """A group created with the user's launch template workers-lt (EKS runs its own copy of it)."""
    return nodegroup(amiType=ami_type, launchTemplate={"id": LT_ID, "name": "workers-lt", "version": lt_version},
                     **overrides)


def options(**given):
    params = dict(kubernetes_version=None, release_version=None, launch_template_version=None, image_id=None,
                  max_unavailable=None, max_unavailable_percentage=None, update_strategy="default", force=False,
                  wait=True, wait_timeout=3600, poll_interval=15)
    params.update(given)
    return params


def update(update_id="u-1", status="InProgress", type_="VersionUpdate", errors=None, **params):
    return dict(id=update_id, status=status, type=type_, errors=errors or [],
                params=[dict(type=key, value=value) for key, value in params.items()],
                createdAt=datetime.datetime(2025, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc))


def refused(fn, *args, **kwargs):
    with pytest.raises(UpgradeError) as caught:
        fn(*args, **kwargs)
    return caught.value
