# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 12: every module returns its result under one key named after what it manages, with Ansible's own keys
(changed, msg, diff) beside it and, on failure only, the error's code and details. The roles, the report and the
integration tests read these keys; run_module_in_process checks each result it returns against them."""

from __future__ import annotations

import importlib
import pathlib

import pytest
import yaml

from .module_docs import result_key

MODULES = sorted(path.stem for path in (pathlib.Path(__file__).resolve().parents[3] / "plugins" / "modules").glob("*.py")
                 if path.stem != "__init__")

# What each module manages, and so the key its result is under.
RESULT_KEYS = {
    "asg_instance_terminate": "termination",
    "asg_surge": "surge",
    "eks_nodegroup_update": "nodegroup_update",
    "fleet_accounts": "fleet_accounts",
    "fleet_ring_health": "ring",
    "fleet_targets": "fleet_targets",
    "launch_template_version": "launch_template",
    "node_drain": "drain",
    "node_replace": "replace",
    "nodegroup_abort": "abort",
    "nodegroup_info": "nodegroup",
    "nodegroup_lease": "lease",
    "nodegroup_pause": "pause",
    "nodegroup_preflight": "preflight",
    "nodegroup_scale_restore": "restore",
    "nodegroup_setup": "setup",
    "upgrade_gate": "gate",
    "upgrade_report_file": "report_file",
    "workload_health": "health",
    # It only fails: its code and parameter, as every module's failure carries them (issue 26 item 3).
    "upgrade_error": None,
}


def load(name):
    return importlib.import_module("ansible_collections.eksops.nodegroup.plugins.modules." + name)


def test_every_module_is_listed():
    assert sorted(RESULT_KEYS) == MODULES


@pytest.mark.parametrize("name", MODULES)
def test_the_result_is_one_documented_dict(name):
    module = load(name)
    if RESULT_KEYS[name] is None:
        assert {entry["returned"] for entry in yaml.safe_load(module.RETURN).values()} == {"failure"}, name
        return
    key = result_key(module)
    assert key == RESULT_KEYS[name]
    entry = yaml.safe_load(module.RETURN)[key]
    assert entry["type"] == "dict" and entry["returned"] in ("always", "success") and entry.get("contains"), name
