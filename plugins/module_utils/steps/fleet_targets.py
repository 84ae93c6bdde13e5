# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""fleet_targets' body (issue 28 item 2): the target of every node group of a fleet, read from SSM once, so that
a new recommendation published while the fleet's waves run cannot give two groups of one family two AMIs. The
SSM parameter of each group is the one the single-group path reads (nodegroup/amis.py eks_ami_ssm_parameter for a
self-managed group's AMI family, managed/target.py release_version_ssm_parameter for a managed group's amiType);
each distinct parameter is read once. Read-only.

Given ``fleet_targets``, the targets a previous run resolved (as upgrade_fleet.yml publishes them: by region, each
SSM parameter's value), nothing is read: a rerun after a halt, or the next job of an AWX workflow, gives every node
group the target the fleet's first run gave its family, whatever SSM recommends since."""

from __future__ import annotations

from collections.abc import Mapping
import re
from typing import Any

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import ssm as ssm_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import NOT_FOUND, UpgradeError, invalid_parameter
from ansible_collections.eksops.nodegroup.plugins.module_utils.managed.target import (
    release_in_image_name,
    release_version_ssm_parameter,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import kinds
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.amis import check_kubernetes_version, eks_ami_ssm_parameter

ARGUMENT_SPEC = dict(
    kubernetes_version=dict(type="str", required=True),
    nodegroups=dict(type="list", elements="dict", required=True, options=dict(
        host=dict(type="str", required=True),
        kind=dict(type="str", required=True, choices=[kinds.MANAGED, kinds.SELF_MANAGED_EKSCTL, kinds.SELF_MANAGED]),
        nodegroup_image_name=dict(type="str"),
        nodegroup_ami_type=dict(type="str"),
    )),
    fleet_targets=dict(type="dict"),
)
CONSTRAINTS: dict[str, Any] = {}
# A well-formed value of each target option: an AMI id (EC2 "Resource IDs": the prefix and 8 or 17 hexadecimal
# characters), an EKS release version (Amazon Linux's 1.30.4-20240917, Bottlerocket's 1.20.3-5d9ac849).
_WELL_FORMED = {"image_id": re.compile(r"^ami-(?:[0-9a-f]{8}|[0-9a-f]{17})$"),
                "release_version": re.compile(r"^[0-9]+[.][0-9]+(?:[.][0-9]+)?-[0-9A-Za-z.]+$")}


def target_parameter(nodegroup: Mapping[str, Any], kubernetes_version: str) -> tuple[str, str]:
    """(the playbook's target option, the SSM parameter holding its value) for one node group of the fleet:
    release_version for an EKS managed group (what EKS would pick for kubernetes_version), image_id for a
    self-managed one (the recommended AMI of its AMI's family)."""
    host = nodegroup["host"]
    if nodegroup["kind"] != kinds.MANAGED:
        try:
            return "image_id", eks_ami_ssm_parameter(nodegroup.get("nodegroup_image_name"), kubernetes_version)
        except UpgradeError:
            # run() checked kubernetes_version first: what is left is the group's AMI, of no family SSM publishes.
            raise invalid_parameter(
                "nodegroup_image_name", "%s: its current AMI %r (host variable nodegroup_image_name) is of no "
                "EKS-optimized AMI family, so the fleet cannot read its target from SSM: upgrade it on its own "
                "(playbooks/upgrade_nodegroup.yml with image_id) and leave it out of the fleet with --limit"
                % (host, nodegroup.get("nodegroup_image_name")))
    ami_type = nodegroup.get("nodegroup_ami_type")
    parameter = release_version_ssm_parameter(ami_type, kubernetes_version)
    if parameter is None or release_in_image_name(ami_type):
        raise invalid_parameter(
            "kubernetes_version", "%s: EKS managed node group of amiType %s, whose release the fleet cannot read from "
            "SSM (a CUSTOM AMI comes from its launch template; a Windows release from its AMI's name): upgrade it on "
            "its own (playbooks/upgrade_nodegroup.yml with launch_template_version or release_version) and leave it "
            "out of the fleet with --limit" % (host, ami_type))
    return "release_version", parameter


def previous_values(previous: Mapping[str, Any], region: str, wanted: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """The values of the SSM parameters ``wanted`` (host -> (option, parameter)) that a previous run resolved in
    ``region`` (``previous``: the fleet_targets it published), each checked well formed for its option; refused
    naming fleet_targets and the hosts when one is missing or malformed."""
    given = previous.get(region)
    if not isinstance(given, Mapping):
        raise invalid_parameter("fleet_targets", "fleet_targets (the targets a previous run of the fleet resolved) has "
                                "none for region %s, where %s run: pass the fleet_targets that run published, or "
                                "none to read the targets from SSM" % (region, ", ".join(sorted(wanted))))
    values: dict[str, str] = {}
    for host, (option, parameter) in sorted(wanted.items()):
        value = given.get(parameter)
        if not isinstance(value, str) or not _WELL_FORMED[option].match(value):
            raise invalid_parameter("fleet_targets", "fleet_targets has no well-formed %s for %s in region %s: SSM "
                                    "parameter %s is %r there (the previous run resolved it for another "
                                    "kubernetes_version or another family?)" % (option, host, region, parameter, value),
                                    ssm_parameter=parameter)
        values[parameter] = value
    return values


def run(module: Any) -> dict[str, Any]:
    """The task result: nothing changed; ``fleet_targets``: ``targets`` by host, each ``{option, value,
    ssm_parameter}``, and ``parameters``, each SSM parameter read once (or taken from the previous run's
    ``fleet_targets``, with no read) and its value."""
    version = module.params["kubernetes_version"]
    check_kubernetes_version(version)
    wanted = dict((nodegroup["host"], target_parameter(nodegroup, version)) for nodegroup in module.params["nodegroups"])
    if module.params["fleet_targets"] is not None:
        values = previous_values(module.params["fleet_targets"], module.aws("ssm").meta.region_name, wanted)
        return dict(changed=False, fleet_targets=dict(targets=_targets(wanted, values), parameters=values))
    values = {}
    for name in sorted(set(parameter for _option, parameter in wanted.values())):
        try:
            values[name] = ssm_api.get_parameter(module.aws("ssm"), name)
        except UpgradeError as err:
            if err.code == NOT_FOUND:
                hosts = sorted(host for host, (_option, parameter) in wanted.items() if parameter == name)
                raise invalid_parameter("kubernetes_version", "Nothing is published for Kubernetes %s "
                                        "(kubernetes_version) for %s: SSM parameter %s does not exist"
                                        % (version, ", ".join(hosts), name), ssm_parameter=name)
            raise
    return dict(changed=False, fleet_targets=dict(targets=_targets(wanted, values), parameters=values))


def _targets(wanted: Mapping[str, tuple[str, str]], values: Mapping[str, str]) -> dict[str, dict[str, str]]:
    return dict((host, dict(option=option, value=values[parameter], ssm_parameter=parameter))
                for host, (option, parameter) in wanted.items())
