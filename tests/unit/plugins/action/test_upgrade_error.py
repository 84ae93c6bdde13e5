# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""upgrade_error (issue 26 item 3, SPEC U8): the roles' refusals and failures fail as the modules do, with the code
and the parameter as data, so that no role reads a code from a message."""

from __future__ import annotations

import pytest

from ansible_collections.eksops.nodegroup.plugins.modules import upgrade_error
from ansible_collections.eksops.nodegroup.plugins.module_utils import errors

from ..module_docs import assert_docs_match_spec

# The action plugin the controller and run fixtures (conftest.py) load.
ACTION = "upgrade_error"


def test_the_documentation_matches_the_argument_spec_and_the_codes_are_errors_py_s(controller):
    assert_docs_match_spec(upgrade_error, controller.action.ARGUMENT_SPEC)
    assert controller.action.ARGUMENT_SPEC["code"]["choices"] == list(errors.CODES)
    constants = [value for name, value in vars(errors).items() if name.isupper() and isinstance(value, str)]
    assert sorted(errors.CODES) == sorted(constants), "every code of errors.py, once"


def test_issue26_item3_a_refusal_fails_with_its_code_and_parameter_as_data(run):
    result = run(code=errors.INVALID_PARAMETER, parameter="drain_timeout",
                 msg="drain_timeout (nodegroup_upgrade_drain_timeout) must be at least 1 second, got 0.")
    assert result == dict(changed=False, failed=True, code="InvalidParameter", parameter="drain_timeout",
                          msg="drain_timeout (nodegroup_upgrade_drain_timeout) must be at least 1 second, got 0.")


def test_a_failure_about_no_parameter_carries_none(run):
    result = run(code=errors.OLD_INSTANCES_LEFT, msg="Instances i-1 still run an old launch template version.")
    assert (result["failed"], result["code"], "parameter" in result) == (True, "OldInstancesLeft", False), result


def test_a_code_that_errors_py_does_not_have_is_refused(run):
    with pytest.raises(Exception, match="value of code must be one of"):
        run(code="Oops", msg="a code made up on the spot")
