# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan.quarantine_preview import quarantine_preview as preview

DOCUMENTATION = r"""
---
name: quarantine_preview
short_description: What undrainable_nodes quarantine would do, for a dry run's plan
version_added: 0.1.0
description:
  - Role C(eksops.nodegroup.nodegroup_upgrade)'s dry run (check mode) with C(undrainable_nodes=quarantine) shows
    what the real run would do (issue 27 item 5), read-only - the old nodes an earlier run quarantined (label
    C(eksops.nodegroup/quarantined=true)) left out of the batches and retried last, the nodes the preflight finds
    held by a PodDisruptionBudget that never allows an eviction (quarantined once C(drain_timeout) runs out,
    instead of failing the run), those whose pods are refused before any eviction (they fail the run all the
    same), and the batch where one node more than C(max_quarantined_nodes) would stop the run
    (module_utils/plan/quarantine_preview.py).
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  _input:
    description:
      - The plan and the run's settings - C(batches) (the plan's, instance ids), C(instances) (module
        C(eksops.nodegroup.nodegroup_info)'s), C(findings) (the preflight's C(warnings_found)),
        C(max_quarantined_nodes), C(force) and C(drain_timeout); optional C(approximate) (default false) - whether
        the run draws its own batches (schedule C(once), the surge strategy, a canary, C(batch_order=zone)), so that
        the lines say C(about batch N) of the batches given and name the nodes.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Show what quarantine would do
  ansible.builtin.debug:
    msg: >-
      {{ (dict(batches=plan.batches, instances=info.nodegroup.instances, findings=preflight.warnings_found,
         max_quarantined_nodes=2, force=false, drain_timeout=600) | eksops.nodegroup.quarantine_preview).lines }}
"""

RETURN = r"""
_value:
  description:
    - C(batches) without the nodes an earlier run quarantined; C(carried), those nodes; C(held) and C(refused), the
      nodes expected to be quarantined or to fail the run, each with its C(batch) and what holds it (C(by)), up to
      the batch the run would stop in (C(exceeded_batch) for max_quarantined_nodes, C(failed_batch) for a
      refusal, else null); C(held_at_once); C(lines), the preview for a person.
  type: dict
"""


def quarantine_preview(plan: Mapping[str, Any]) -> dict[str, Any]:
    return preview(plan["batches"], plan["instances"], plan["findings"], int(plan["max_quarantined_nodes"]),
                   boolean(plan["force"], strict=False), int(plan["drain_timeout"]),
                   boolean(plan.get("approximate", False), strict=False))


class FilterModule(object):
    def filters(self) -> dict[str, Callable[..., Any]]:
        return {"quarantine_preview": quarantine_preview}
