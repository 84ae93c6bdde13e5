# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)


class ModuleDocFragment(object):
    # Attributes several modules share word for word: their module_defaults groups (meta/runtime.yml), and the
    # check and diff mode of the read-only modules. Each module documents its own check and diff mode otherwise.
    # One fragment per set of groups: two fragments that both document action_group do not add up (the first
    # one's membership wins).
    AWS_GROUP = r"""
attributes:
  action_group:
    description: Use C(group/eksops.nodegroup.aws) in C(module_defaults) to set the AWS options of every module of
      the collection at once.
    support: full
    membership:
      - eksops.nodegroup.aws
"""

    AWS_K8S_GROUPS = r"""
attributes:
  action_group:
    description: Use C(group/eksops.nodegroup.aws) in C(module_defaults) to set the AWS options of every module of
      the collection at once, and C(group/eksops.nodegroup.k8s) to set the Kubernetes options of every module that
      talks to the cluster.
    support: full
    membership:
      - eksops.nodegroup.aws
      - eksops.nodegroup.k8s
"""

    READ_ONLY = r"""
attributes:
  check_mode:
    support: full
    description: Runs the same in check mode; it changes nothing anyway.
  diff_mode:
    support: N/A
    description: Changes nothing, so there is no diff.
"""

    # The modules whose work runs in an action plugin of the same name (issue 11 item 4).
    CONTROLLER = r"""
notes:
  - "It runs on the controller, in the process of the task, whatever the task's host or C(delegate_to): its action
    plugin does the work instead of a module process (docs/architecture.md says why). The controller's Python needs
    boto3, botocore and kubernetes."
attributes:
  action:
    support: full
    description: Runs in an action plugin on the controller.
  async:
    support: none
    description: Runs in the task's own process on the controller.
"""
