# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 3: each host of the eks_nodegroups inventory names its cluster's node groups (``cluster_nodegroups``),
the hosts this source lists, so that the fleet playbook can tell a job slice of AWX (which holds only some of them)
from the whole inventory (docs/awx.md, *Job slicing*)."""

from __future__ import annotations


def test_issue28_item3_each_host_names_the_node_groups_of_its_cluster(inventory):
    data, _plugin = inventory(dict(regions=["us-west-2", "us-east-1"],
                                   hostname="'ng-' ~ cluster_name ~ '-' ~ nodegroup_name"))
    assert data.get_host("ng-prod-b-web").get_vars()["cluster_nodegroups"] == ["ng-prod-b-batch", "ng-prod-b-web"]
    assert data.get_host("ng-prod-c-api").get_vars()["cluster_nodegroups"] == ["ng-prod-c-api"]


def test_issue28_item3_cluster_nodegroups_are_the_node_groups_the_filters_keep(inventory):
    data, _plugin = inventory(dict(tags={"upgrade-ring": "[12]"}))
    assert data.get_host("prod-b/batch").get_vars()["cluster_nodegroups"] == ["prod-b/batch"]


def test_issue28_item3_the_session_token_of_awx_aws_credential_is_read(inventory, monkeypatch):
    # AWX's Amazon Web Services credential injects temporary credentials' token as AWS_SECURITY_TOKEN
    # (awx/main/tests/unit/test_tasks.py, test_aws_cloud_credential with a security token).
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("AWS_SECURITY_TOKEN", "awx-token")
    _data, plugin = inventory({})
    assert plugin.get_option("session_token") == "awx-token"
