# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain's options (_drain/options.py): SPEC names, defaults, and refusals naming the parameter."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.options import DrainOptions
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import UpgradeError


@pytest.mark.parametrize("options, parameter", [
    (dict(drain_timeout=0), "drain_timeout"),
    (dict(eviction_concurrency=0), "eviction_concurrency"),
    (dict(eviction_concurrency=101), "eviction_concurrency"),
    (dict(post_drain_wait=-1), "post_drain_wait"),
    (dict(drain_timout=5), "drain_timout"),
])
def test_invalid_options_name_the_parameter(options, parameter):
    with pytest.raises(UpgradeError) as info:
        DrainOptions(**options)
    assert info.value.code == "InvalidParameter" and info.value.details["parameter"] == parameter


def test_options_defaults_are_the_upgrade_defaults():
    options = DrainOptions(pod_selectors=["app=web", "tier=front"])
    assert (options.drain_timeout, options.grace_period, options.ignore_daemonsets, options.delete_emptydir_data,
            options.post_drain_wait, options.force) == (900, -1, True, True, 60, False)
    assert options.pod_selectors == "app=web,tier=front"
    assert options.run_id.startswith("drain-")


# ----------------------------------------------------------------------------------------------------------
# Issue 10 item 24: pod_selectors parsed as the API server's labels.Parse, before any change
# ----------------------------------------------------------------------------------------------------------

def test_issue10_item24_drain_options_refuse_an_invalid_pod_selector_naming_pod_selectors():
    with pytest.raises(UpgradeError) as info:
        DrainOptions(pod_selectors=["app=web", "tier in (("])
    assert (info.value.code, info.value.details["parameter"]) == ("InvalidParameter", "pod_selectors")
    assert "app=web,tier in ((" in info.value.msg and "key in (v1,v2)" in info.value.msg
    # Ansible splits a string option on commas: the pieces of one set requirement are joined back before parsing
    assert DrainOptions(pod_selectors=["app in (web", "api)"]).pod_selectors == "app in (web,api)"
