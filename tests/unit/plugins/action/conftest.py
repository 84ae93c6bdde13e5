# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""An action plugin of the collection, run in the test's process: the test module's ``ACTION`` names it."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import pytest

try:
    from ansible.module_utils import _internal
except ImportError:  # ansible-core < 2.19: importing the controller leaves modules' warnings alone
    _internal = None


@pytest.fixture(scope="module")
def controller(request):
    """The action plugin and what runs it. Importing them imports Ansible's controller, which from then on sends
    every module warning of the process to Display instead of the module's result
    (ansible.module_utils._internal.is_controller): they are imported here rather than at the top, and the flag is
    put back after, so that the modules other tests run in this process keep their result warnings."""
    was = getattr(_internal, "is_controller", None)
    try:
        yield SimpleNamespace(
            action=importlib.import_module("ansible_collections.eksops.nodegroup.plugins.action." + request.module.ACTION),
            Task=importlib.import_module("ansible.playbook.task").Task,
            Templar=importlib.import_module("ansible.template").Templar,
            DataLoader=importlib.import_module("ansible.parsing.dataloader").DataLoader)
    finally:
        if _internal is not None:
            _internal.is_controller = was


@pytest.fixture
def run(controller):
    def run_action(check_mode=False, diff=False, **args):
        task = controller.Task()
        task.args = args
        task.check_mode = check_mode
        task.diff = diff
        loader = controller.DataLoader()
        # ActionBase.run only asks the connection whether its shell has a temporary directory: it has, none is needed.
        connection = SimpleNamespace(_shell=SimpleNamespace(tmpdir="unused"))
        action = controller.action.ActionModule(task, connection, None, loader, controller.Templar(loader), None)
        return action.run(task_vars={})
    return run_action
