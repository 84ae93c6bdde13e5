#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


DOCUMENTATION = r"""
---
module: eks_nodegroup_update
short_description: Update an EKS managed node group through EKS's own API and follow the update to its end
version_added: 0.1.0
description:
  - Updates an EKS B(managed) node group the way EKS supports it (SPEC K3). EKS owns the group's Auto Scaling
    group and launch template; this module never writes to them (doing so makes the group C(DEGRADED) with
    C(Ec2LaunchTemplateVersionMismatch)), and it calls no mutating Auto Scaling or EC2 API.
  - When the group's C(updateConfig) differs from O(max_unavailable), O(max_unavailable_percentage) and
    O(update_strategy), calls C(UpdateNodegroupConfig) first and waits for that update to end, since EKS takes
    one update of a node group at a time.
  - Then calls C(UpdateNodegroupVersion) with the target (a Kubernetes version, an EKS AMI release version, or a
    version of the group's own launch template) and O(force), and follows the update with C(DescribeUpdate)
    until it ends or O(wait_timeout) is reached. EKS runs the four phases itself (setup, scale up, upgrade,
    scale down).
  - A C(Failed) update fails the module with EKS's own error code (C(PodEvictionFailure),
    C(NodeCreationFailure), ...) and EKS's message, naming the resources EKS named.
  - EKS's C(PodEvictionFailure) names only the nodes it could not drain. The module then lists the pods still on
    them and the PodDisruptionBudgets that select them, and names each pod with what holds it (a budget that allows
    no disruption, several budgets, a pod still terminating), as the self-managed drain names the pods it could not
    evict; the failed result's C(blocking_pods) has them by node (C(pod), C(reason), C(pdb)). The Kubernetes API is
    proven to be O(cluster_name)'s first (SPEC K4); EKS's error is reported whatever the cluster answers.
  - "Idempotent (SPEC K5): a group already on the target with no update in progress is left alone, and the
    result says so. An update to the same target that EKS is already running (started by an earlier run, or
    still running when O(wait_timeout) ended it) is followed, not started again. Any other update in progress
    is refused, naming it, before anything changes."
  - Every input is checked before the first change. Exactly one of O(kubernetes_version), O(release_version),
    O(launch_template_version) and O(image_id) is required.
author:
  - eksops.nodegroup maintainers (@eksops)
options:
  cluster_name:
    description:
      - Name of the EKS cluster.
    type: str
    required: true
  nodegroup_name:
    description:
      - Name of the EKS managed node group.
      - A self-managed node group (no C(DescribeNodegroup) answer) is refused; use the collection's rolling
        upgrade modules for it.
    type: str
    required: true
  kubernetes_version:
    description:
      - Update the group to this Kubernetes version (for example C(1.31)), on the latest EKS-optimized AMI release
        EKS has for it. Sent as C(version).
      - Refused when newer than the cluster's control plane (SPEC K6) or older than the group's version (EKS
        cannot roll back), and for a group whose launch template names its own AMI (C(amiType) C(CUSTOM)).
      - For Amazon Linux groups, the release EKS will pick is read from the public SSM parameter
        C(/aws/service/eks/optimized-ami/<version>/<family>/recommended/release_version) of the group's
        C(amiType), for Bottlerocket groups from C(/aws/service/bottlerocket/aws-k8s-<version>[-fips]/<arch>/latest/image_version);
        for Windows groups from the name of the AMI that
        C(/aws/service/ami-windows-latest/Windows_Server-<year>-English-<Core|Full>-EKS_Optimized-<version>/image_id)
        names (C(...-EKS_Optimized-1.31-2024.11.12) is release C(1.31-2024.11.12)). A group on that version and
        release has nothing to do, and a group on the version but an older release moves to the newest one. When
        the release cannot be read (a Windows AMI name that does not say it), the version alone decides, with a
        warning.
    type: str
  release_version:
    description:
      - Update the group to this EKS-optimized AMI release version (for example C(1.31.3-20250103)). Sent as
        C(releaseVersion); for an Amazon Linux release, its Kubernetes version is sent as C(version) too, and is
        checked against the control plane like O(kubernetes_version).
      - Refused for a group whose launch template names its own AMI, and (Amazon Linux) when older than the
        group's release.
    type: str
  launch_template_version:
    description:
      - Update the group to this version number of its own launch template (the one it was created with), sent
        as C(launchTemplate) with the template's id. This is how a group with a custom AMI gets a new AMI.
      - Refused for a group created without a launch template.
    type: int
  image_id:
    description:
      - Not supported by EKS for managed node groups; accepted only to refuse it with what to use instead
        (O(kubernetes_version) or O(release_version), or a new version of the group's launch template with that
        AMI, passed as O(launch_template_version)).
    type: str
  force:
    description:
      - Passed to C(UpdateNodegroupVersion). EKS then replaces nodes whose pods a PodDisruptionBudget keeps from
        being drained, instead of failing with C(PodEvictionFailure).
      - Has no effect on an update already in progress, which keeps the setting it was started with.
    type: bool
    default: false
  max_unavailable:
    description:
      - Nodes EKS updates in parallel (1 to 100), set in the group's C(updateConfig) before the update.
      - Mutually exclusive with O(max_unavailable_percentage). EKS keeps one of the two; setting one clears the
        other.
      - When neither is set, the group's own setting is kept.
    type: int
  max_unavailable_percentage:
    description:
      - Nodes EKS updates in parallel, as a percentage of the group's nodes (1 to 100).
    type: int
  update_strategy:
    description:
      - C(default) launches new nodes before terminating old ones; C(minimal) terminates old nodes first, for
        capacity-constrained groups (SPEC U7). Set in the group's C(updateConfig) as C(DEFAULT) or C(MINIMAL).
      - When not set, the group's own strategy is kept.
    type: str
    choices: [default, minimal]
  wait:
    description:
      - Follow the version update until it ends or O(wait_timeout) is reached.
      - With V(false) the module returns once EKS has accepted the update (it still waits for a configuration
        update it made, which must end before the version update can start).
    type: bool
    default: true
  wait_timeout:
    description:
      - How long to follow the update, in seconds (0 or more), counted from O(following_since).
      - When it ends first, the module returns RV(nodegroup_update.finished=false) and RV(nodegroup_update.timed_out=true) with the update still
        C(InProgress). That is not a failure of the module; EKS goes on, and a run with the same target follows
        the update again.
    type: int
    default: 3600
  update_id:
    description:
      - Follow this version update only, the one an earlier run started (its RV(nodegroup_update.eks_update.id)); the run never
        starts another, and reports the update's end as it is, C(Failed) included. A role that shows progress
        between runs passes it back so that a failed update is reported instead of started again.
      - The id of a configuration update this module started is accepted too; the version update then starts
        once it has ended.
    type: str
  following_since:
    description:
      - When following began, in seconds since the epoch, so that one follow can span several runs of the
        module (a role that shows progress between runs passes back the RV(nodegroup_update.following_since) the first run
        returned). Defaults to the start of this run.
    type: float
  return_after:
    description:
      - Return after this many seconds of following even though the update goes on (RV(nodegroup_update.finished=false),
        RV(nodegroup_update.timed_out=false)), so the caller can show progress and run the module again. Defaults to
        O(wait_timeout).
    type: int
  poll_interval:
    description:
      - Seconds between two C(DescribeUpdate) calls while following an update (at least 0.05; the default keeps
        EKS's API calm over an update of hours).
    type: float
    default: 15
extends_documentation_fragment:
  - eksops.nodegroup.aws
  - eksops.nodegroup.k8s
  - eksops.nodegroup.attributes.aws_k8s_groups
  - eksops.nodegroup.attributes.controller
attributes:
  check_mode:
    support: full
    description: Reports the plan (the configuration update and the version update request it would send, or
      the update it would follow) and calls no C(Update*) API.
  diff_mode:
    support: full
    description: Shows the group's version, release version, launch template version and update configuration
      before and after (predicted where the update has not ended; values only EKS decides are shown as
      C(chosen by EKS)).
notes:
  - The node group's C(DescribeNodegroup) status must allow an update (C(ACTIVE), C(UPDATING) or C(DEGRADED)).
  - The result's C(changed) is true when this run called C(UpdateNodegroupConfig) or C(UpdateNodegroupVersion)
    (in check mode, would call). Following an update started earlier is not a change.
  - Needs C(eks:DescribeCluster), C(eks:DescribeNodegroup), C(eks:ListUpdates), C(eks:DescribeUpdate),
    C(eks:UpdateNodegroupConfig), C(eks:UpdateNodegroupVersion), C(ssm:GetParameter) (with
    O(kubernetes_version)), C(ec2:DescribeImages) (with O(kubernetes_version) on a Windows group),
    C(ec2:DescribeLaunchTemplateVersions) (with O(launch_template_version)) and
    C(autoscaling:DescribeAutoScalingGroups) (progress). See
    C(docs/iam-policy.json).
  - In the cluster, watches pods and the group's nodes while EKS works, and after a C(PodEvictionFailure) lists
    pods and PodDisruptionBudgets (C(docs/rbac.yaml)).
seealso:
  - name: Update a managed node group (EKS user guide)
    description: How EKS updates a managed node group, phase by phase.
    link: https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html
  - module: eksops.nodegroup.nodegroup_info
"""

EXAMPLES = r"""
- name: Update the managed node group to Kubernetes 1.31, two nodes at a time
  eksops.nodegroup.eks_nodegroup_update:
    cluster_name: prod
    nodegroup_name: workers
    kubernetes_version: "1.31"
    max_unavailable: 2
  register: node_update

- name: Move a GPU group to a given AMI release, terminating old nodes first
  eksops.nodegroup.eks_nodegroup_update:
    cluster_name: prod
    nodegroup_name: gpu
    release_version: 1.31.3-20250103
    update_strategy: minimal

- name: Roll a custom-AMI group to version 7 of its launch template, following for at most 30 minutes per run
  eksops.nodegroup.eks_nodegroup_update:
    cluster_name: prod
    nodegroup_name: custom
    launch_template_version: 7
    force: true
    wait_timeout: 1800
  register: node_update
  until: node_update.nodegroup_update.finished
  retries: 6
  delay: 0
"""

RETURN = r"""
msg:
  description: What the run did, in a sentence (for example that the group is already on the target).
  returned: always
  type: str
  sample: Node group workers is already on the target (kubernetes_version 1.31); nothing to do
nodegroup_update:
  description: The plan, the EKS update followed and where the node group stands; on failure, as far as the module got.
  returned: always
  type: dict
  contains:
    following_since:
      description: When following began (O(following_since), else the start of this run), in seconds since the epoch.
      returned: always
      type: float
    timed_out:
      description: Whether O(wait_timeout) has passed since RV(nodegroup_update.following_since) with the update still in progress.
      returned: always
      type: bool
    finished:
      description:
        - Whether there is nothing left to follow; the group is on the target, or the update ended.
        - C(false) when O(wait_timeout) ended the run (or O(wait=false)) with the update still C(InProgress), and
          in check mode when there is something to do.
      returned: always
      type: bool
    plan:
      description: What the run decided, before changing anything.
      returned: always
      type: dict
      contains:
        action:
          description: C(none) (already on the target), C(follow) (an update to the target is in progress) or
            C(start).
          type: str
          sample: start
        message:
          description: The decision in a sentence.
          type: str
        target:
          description: The target option and its value.
          type: dict
          sample: {option: kubernetes_version, value: "1.31"}
        expected_release_version:
          description: The release EKS picks for O(kubernetes_version), from SSM (Amazon Linux only), else null.
          type: str
          sample: 1.31.3-20250103
        follow_update_id:
          description: Id of the update in progress that is followed (action C(follow)).
          type: str
        pending_config_update_id:
          description: Id of a configuration update to the wanted C(updateConfig) still in progress, waited for
            before the version update.
          type: str
        config_update:
          description: The C(UpdateNodegroupConfig) request, as sent to EKS, or null when the group's
            C(updateConfig) already matches.
          type: dict
          sample:
            clusterName: prod
            nodegroupName: workers
            updateConfig: {maxUnavailable: 2, updateStrategy: DEFAULT}
        version_update:
          description: The C(UpdateNodegroupVersion) request, as sent to EKS (action C(start)).
          type: dict
          sample: {clusterName: prod, nodegroupName: workers, force: false, version: "1.31"}
    eks_update:
      description:
        - The EKS update this run started or followed last, as C(DescribeUpdate) last described it; null when there
          is nothing to do.
        - Not named C(update), which Jinja2 would take for the dict method in C(result.update).
      returned: always
      type: dict
      contains:
        id:
          description: The update's id.
          type: str
          sample: a94ebfc3-6bf8-307a-89e6-7dbaa36421f7
        status:
          description: C(InProgress), C(Successful), C(Failed) or C(Cancelled).
          type: str
        type:
          description: C(VersionUpdate), or C(ConfigUpdate) when the run ended while the configuration update ran.
          type: str
        params:
          description: The update's parameters as EKS records them (C(type), C(value)).
          type: list
          elements: dict
          sample: [{type: Version, value: "1.31"}, {type: ReleaseVersion, value: 1.31.3-20250103}]
        errors:
          description: EKS's errors (C(error_code), C(error_message), C(resource_ids)).
          type: list
          elements: dict
        created_at:
          description: When EKS created the update (ISO 8601).
          type: str
    nodegroup:
      description: The node group as C(DescribeNodegroup) describes it at the end of the run.
      returned: always
      type: dict
      contains:
        name:
          description: Node group name.
          type: str
        status:
          description: C(ACTIVE), C(UPDATING), C(DEGRADED), ...
          type: str
        version:
          description: Kubernetes version.
          type: str
        release_version:
          description: AMI release version (for a custom-AMI launch template, the AMI id).
          type: str
        ami_type:
          description: The group's C(amiType).
          type: str
        launch_template:
          description: The group's own launch template (C(id), C(name), C(version)), or null.
          type: dict
        update_config:
          description: C(max_unavailable), C(max_unavailable_percentage) and C(update_strategy) as EKS reports them.
          type: dict
        health_issues:
          description: EKS's health issues (C(code), C(message), C(resource_ids)).
          type: list
          elements: dict
        auto_scaling_groups:
          description: Names of the Auto Scaling groups EKS runs for the group.
          type: list
          elements: str
    evictions:
      description:
        - What EKS's drains did while this run followed the update, seen in the cluster (issue 29 item 3); null when
          no update was started or followed (nothing to do, check mode).
        - C(pods_evicted) counts the pods evicted from the group's nodes (kube-apiserver marks each with the
          condition C(DisruptionTarget), reason C(EvictionByEvictionAPI)); C(nodes_replaced) names the group's nodes
          there when following began and gone at its end; C(counted) is false when the cluster could not be watched
          all along (the figures then miss what was not seen, and a warning says why).
      returned: always
      type: dict
      sample: {pods_evicted: 14, nodes_replaced: [ip-10-0-1-1.ec2.internal, ip-10-0-2-1.ec2.internal], counted: true}
    progress:
      description:
        - InService instances of the group's Auto Scaling groups (C(nodes_total)) and those launched from the launch
          template version the groups point at (C(nodes_updated)), read with C(DescribeAutoScalingGroups).
        - Until EKS has moved the groups to the new launch template version, early in an update, every node counts
          as updated.
      returned: always
      type: dict
      sample: {nodes_total: 6, nodes_updated: 4}
diff:
  description: Version, release version, launch template version and update configuration before and after.
  returned: in diff mode
  type: dict
code:
  description: On failure, EKS's error code of a failed update (C(PodEvictionFailure), C(NodeCreationFailure),
    ...), C(ResourceInUseException) for another update in progress, or the collection's code.
  returned: failure
  type: str
  sample: PodEvictionFailure
"""

from ansible_collections.eksops.nodegroup.plugins.module_utils.steps.eks_nodegroup_update import ARGUMENT_SPEC, run
from ansible_collections.eksops.nodegroup.plugins.module_utils.host.module import EksopsModule


def main() -> None:
    module = EksopsModule(ARGUMENT_SPEC, uses_aws=True, uses_k8s=True, supports_check_mode=True)
    module.run(lambda: run(module))


if __name__ == "__main__":
    main()
