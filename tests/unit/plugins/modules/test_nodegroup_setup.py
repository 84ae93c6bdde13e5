# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""nodegroup_setup (issue 11 item 4): its documentation matches its argument spec."""

from __future__ import annotations

from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import merged_argument_spec
from ansible_collections.eksops.nodegroup.plugins.module_utils.phases.setup import ARGUMENT_SPEC
from ansible_collections.eksops.nodegroup.plugins.modules import nodegroup_setup

from ..module_docs import assert_docs_match_spec


def test_the_documentation_matches_the_argument_spec():
    assert_docs_match_spec(nodegroup_setup, merged_argument_spec(ARGUMENT_SPEC, uses_aws=True, uses_k8s=True))
