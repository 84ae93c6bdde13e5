# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 26 item 3 (SPEC U8): one failure type. Every failure of the roles and playbooks carries its code as data
(the modules' UpgradeError, or eksops.nodegroup.upgrade_error for the roles' own refusals), the failure handling
reads the code from the failed task's result and never from its message, and every code the roles name is one of
plugins/module_utils/errors.py."""

from __future__ import annotations

import re

import yaml

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import CODES

from .test_messages import ROOT, yaml_files

FAIL_ACTIONS = ("ansible.builtin.fail", "ansible.builtin.assert", "fail", "assert")
UPGRADE_ERROR = "eksops.nodegroup.upgrade_error"
# A message that begins with a code, as the roles' refusals began before ("InvalidParameter: ...").
CODE_FIRST = re.compile(r"^[A-Z][a-z]+(?:[A-Z][a-z]+)+: ")
# The one ansible.builtin.fail left: the nodegroup_upgrade role's last task fails the play with the error it recorded
# (its summary), after its report; the code is in the report.
RERAISE = ("roles/nodegroup_upgrade/tasks/main.yml", "Fail with the error, the state of the group and how to resume")
# The one code given as an expression: the fleet's bake stops with the code filter fleet_bake_halt chose
# (HealthGateFailed, or the code of the module whose read failed; plan/fleet_bake_verdict.py).
FROM_A_RESULT = ("playbooks/upgrade_fleet.yml", "{{ fleet_bake_halt.code }}")


def tasks(node):
    """Every task of a task file or playbook (in blocks, rescues and always too)."""
    if isinstance(node, dict):
        if "name" in node and not {"hosts", "block"} & set(node):
            yield node
        for value in node.values():
            yield from tasks(value)
    elif isinstance(node, list):
        for value in node:
            yield from tasks(value)


def all_tasks():
    for path in yaml_files():
        for task in tasks(yaml.safe_load(path.read_text())):
            yield path.relative_to(ROOT).as_posix(), task


def test_issue26_item3_no_role_reads_a_code_from_a_message():
    """failure.yml found a role's code with regex_search('^[A-Z][A-Za-z]+(?=: )') on the failed task's message."""
    readers = [(path, task["name"]) for path, task in all_tasks()
               if "ansible_failed_result" in yaml.safe_dump(task) and "regex_" in yaml.safe_dump(task)]
    assert readers == []


def test_issue26_item3_every_failure_of_the_roles_carries_its_code_as_data():
    plain = [(path, task["name"]) for path, task in all_tasks()
             if set(FAIL_ACTIONS) & set(task) and (path, task["name"]) != RERAISE]
    assert plain == [], "fail with eksops.nodegroup.upgrade_error, the code and the parameter as data"
    refusals = [(path, task[UPGRADE_ERROR]) for path, task in all_tasks() if UPGRADE_ERROR in task]
    # The upgrade role's check of the old instances left serves both strategies (issue 26 item 2).
    assert len(refusals) >= 9
    for path, args in refusals:
        assert args["code"] in CODES or (path, args["code"]) == FROM_A_RESULT, (path, args)
        assert not CODE_FIRST.match(args["msg"].strip()), (path, args["msg"])


def test_the_codes_the_roles_name_are_errors_py_s():
    """The node-creation codes that decide a rollback, and the codes the resume advice is keyed by."""
    role_vars = yaml.safe_load((ROOT / "roles" / "nodegroup_upgrade" / "vars" / "main.yml").read_text())
    assert set(role_vars["nodegroup_upgrade_node_creation_codes"]) <= set(CODES)
    situations = {"input_after_start", "nothing_changed", "rolled_back", "default"}
    assert set(role_vars["nodegroup_upgrade_resume_advice"]) - situations <= set(CODES)
