# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The EKS node-group operations the sandbox answers (ListNodegroups, DescribeNodegroup, UpdateNodegroupVersion,
UpdateNodegroupConfig, DescribeUpdate, ListUpdates): their validation and effects, on EksNodegroups' records.

Parameters and responses are botocore's EKS model (data/eks/2017-11-01/service-2.json); the rules come from its
documentation (quoted) and error messages are EKS's own wording where users have published it:
- "No cluster found for name: X." / "No node group found for name: X." (ResourceNotFoundException; e.g.
  eksctl-io/eksctl#7747, terraform-aws-modules/terraform-aws-eks#793);
- "Nodegroup Kubernetes version should be equal to Cluster kubernetes version A or NodeGroup kubernetes version B"
  (aws-controllers-k8s/community#2957); "Requested release version R is not valid for kubernetes version V."
  (eksctl-io/eksctl#7976); "Either provide launch template ID or launch template name in the request."
  (eksctl-io/eksctl#3104), all InvalidParameterException;
- an update already running: ResourceInUseException worded as EKS words it for clusters ("Cannot
  EndpointAccessUpdate because cluster X currently has update U in progress", aws-controllers-k8s/community#1192).
Messages marked "sandbox wording" are not published anywhere we found.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .records import ManagedNodegroup, Update
from .update import Target

if TYPE_CHECKING:
    from .service import EksNodegroups

__all__ = ["EksError", "OPERATIONS"]

MAX_RESULTS = 100
_CONFIG_PARAMS = {"maxUnavailable": "MaxUnavailable", "maxUnavailablePercentage": "MaxUnavailablePercentage",
                  "updateStrategy": "UpdateStrategy"}  # UpdateParamType of each NodegroupUpdateConfig member
_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)-(\d{8})$")


class EksError(Exception):
    """An EKS error: its code (an error shape of the model) and the members of its body."""

    def __init__(self, code: str, message: str, **members: str):
        super().__init__(message)
        self.code = code
        self.body = {"message": message, **members}


def _invalid(message: str, record: ManagedNodegroup) -> EksError:
    return EksError("InvalidParameterException", message, clusterName=record.cluster, nodegroupName=record.name)


def _page(items: list[str], max_results: Any, next_token: str | None) -> tuple[list[str], str | None]:
    """One page of a list (maxResults 1..100, default 100) and the token of the next."""
    size = MAX_RESULTS if max_results is None else int(max_results)
    if not 1 <= size <= MAX_RESULTS:
        raise EksError("InvalidParameterException", f"maxResults must be between 1 and {MAX_RESULTS}")
    start = int(next_token) if next_token and next_token.isdigit() else 0
    if next_token and not next_token.isdigit():
        raise EksError("InvalidParameterException", "The nextToken is not valid.")  # sandbox wording
    end = start + size
    return items[start:end], str(end) if end < len(items) else None


# ------------------------------------------------------------------------------------------------ reads

def list_nodegroups(eks: EksNodegroups, clusterName: str, maxResults: Any = None, nextToken: str | None = None
                    ) -> dict[str, Any]:
    eks.check_cluster(clusterName)
    names, token = _page(list(eks.records), maxResults, nextToken)
    return {"nodegroups": names, **({"nextToken": token} if token else {})}


def describe_nodegroup(eks: EksNodegroups, clusterName: str, nodegroupName: str) -> dict[str, Any]:
    return {"nodegroup": eks.nodegroup_api_view(eks.nodegroup(clusterName, nodegroupName))}


def describe_update(eks: EksNodegroups, name: str, updateId: str, nodegroupName: str, **unused: Any
                    ) -> dict[str, Any]:
    record = eks.nodegroup(name, nodegroupName)
    update = next((u for u in record.updates if u.id == updateId), None)
    if update is None:
        raise EksError("ResourceNotFoundException", f"No update found for ID: {updateId}.",  # sandbox wording
                       clusterName=name, nodegroupName=nodegroupName)
    return {"update": update.to_api()}


def list_updates(eks: EksNodegroups, name: str, nodegroupName: str, nextToken: str | None = None,
                 maxResults: Any = None, **unused: Any) -> dict[str, Any]:
    record = eks.nodegroup(name, nodegroupName)
    ids, token = _page([u.id for u in record.updates], maxResults, nextToken)
    return {"updateIds": ids, **({"nextToken": token} if token else {})}


# ------------------------------------------------------------------------------------------------ updates

def _retried(record: ManagedNodegroup, token: str | None) -> Update | None:
    """The update an earlier request with the same clientRequestToken started (botocore fills the token in)."""
    return next((u for u in record.updates if token and u.client_request_token == token), None)


def _check_not_busy(record: ManagedNodegroup, update_type: str) -> None:
    running = record.in_progress()
    if running is not None:
        raise EksError("ResourceInUseException", f"Cannot {update_type} because nodegroup {record.name} currently "
                       f"has update {running.id} in progress", clusterName=record.cluster, nodegroupName=record.name)


def _release_key(release: str) -> tuple:
    """Orders EKS optimized AMI releases ("1.30.4-20240917": Kubernetes patch version, then build date)."""
    match = _RELEASE.match(release)
    return tuple(int(g) for g in match.groups()) if match else ()


def _latest_ami(eks: EksNodegroups, record: ManagedNodegroup, version: str) -> dict[str, Any]:
    """ "the latest available AMI for that version": the recommended AMI of the node group's AMI family (what
    the SSM parameter .../recommended/image_id names), else the newest release."""
    candidates = [a for a in eks.amis if a["family"] == record.ami["family"] and a["kubernetes_version"] == version]
    if not candidates:
        raise _invalid(f"No {record.ami_type} AMI release is available for kubernetes version {version}.",  # sandbox
                       record)
    recommended = [a for a in candidates if a["recommended"]]
    return recommended[0] if recommended else max(candidates, key=lambda a: _release_key(a["release_version"]))


def _target_ami(eks: EksNodegroups, record: ManagedNodegroup, version: str | None, release: str | None
                ) -> dict[str, Any]:
    # version: "The version that you update to can't be greater than the control plane's version" (user guide,
    # "Update a managed node group"); "You cannot roll back a node group to an earlier Kubernetes version or AMI
    # version." (UpdateNodegroupVersion). "If no version is specified, then the node group will be updated to match
    # the cluster's current Kubernetes version" -- but a releaseVersion alone is checked against the node group's
    # own version (the "not valid for kubernetes version" error of eksctl-io/eksctl#7976).
    cluster_version = eks.check_cluster(record.cluster)
    if version is not None and version not in (cluster_version, record.version):
        raise _invalid(f"Nodegroup Kubernetes version should be equal to Cluster kubernetes version "
                       f"{cluster_version} or NodeGroup kubernetes version {record.version}", record)
    if release is None:
        return _latest_ami(eks, record, version or cluster_version)
    version = version or record.version
    ami = next((a for a in eks.amis if a["family"] == record.ami["family"] and a["release_version"] == release
                and a["kubernetes_version"] == version), None)
    if ami is None:
        raise _invalid(f"Requested release version {release} is not valid for kubernetes version {version}.", record)
    if _release_key(release) < _release_key(record.release_version):
        raise _invalid("You cannot roll back a node group to an earlier Kubernetes version or AMI version.",
                       record)  # the API reference's sentence, as the message
    return ami


def _source_version(eks: EksNodegroups, record: ManagedNodegroup, launch_template: dict[str, Any] | None
                    ) -> int | None:
    """The version of the node group's own launch template to update to (None for a node group without one).
    launchTemplate: "You can only update a node group using a launch template if the node group was originally
    deployed with a launch template. When updating, you must specify the same launch template ID or name that was
    used to create the node group." LaunchTemplateSpecification: "You must specify either the launch template
    name or the launch template ID in the request, but not both." "If no version is specified, then the
    template's default version is used." """
    source = record.source_template
    if launch_template is None:
        return None if source is None else source["version"]
    if source is None:
        raise EksError("InvalidRequestException", "You can only update a node group using a launch template if "
                       "the node group was originally deployed with a launch template.",
                       clusterName=record.cluster, nodegroupName=record.name)
    given_id, given_name = launch_template.get("id"), launch_template.get("name")
    if bool(given_id) == bool(given_name):
        raise _invalid("Either provide launch template ID or launch template name in the request.", record)
    if given_id not in (None, source["id"]) or given_name not in (None, source["name"]):
        raise _invalid("You must specify the same launch template ID or name that was used to create the node "
                       "group.", record)
    number = eks.launch_template_version_number(source["id"], launch_template.get("version") or "$Default")
    if number is None:
        raise _invalid(f"Could not find the specified version {launch_template.get('version')} for the launch "
                       f"template with ID {source['id']}.", record)  # EC2's wording
    return number


def _custom_ami_target(eks: EksNodegroups, record: ManagedNodegroup, version: str | None, release: str | None,
                       source_version: int) -> dict[str, Any]:
    """The AMI of a node group whose launch template names it: the one the launch template version names ("Limits
    and conditions when specifying an AMI ID": "To update your node group to a newer AMI version, you need to create
    a new version of your launch template with an updated AMI ID. Then, you need to update the node group with the
    new launch template version"). "The following fields can't be set in the API if you specify an AMI ID: amiType,
    releaseVersion, version" (UpdateNodegroupVersion: "don't specify version, or the node group update will fail"):
    refused here, as an InvalidParameterException (assumption: the guide does not say at which step it fails)."""
    if version is not None or release is not None:
        raise _invalid("You cannot specify version or releaseVersion for a node group whose launch template "
                       "specifies an AMI ID; update it with a new launch template version.", record)  # sandbox
    image_id = eks.launch_template_image(record.source_template["id"], source_version)
    ami = next((a for a in eks.amis if a["id"] == image_id), None)
    if ami is None:
        raise _invalid(f"The AMI {image_id} of launch template {record.source_template['id']} version "
                       f"{source_version} is not available.", record)  # sandbox: only the scenario's AMIs boot
    return ami


def update_nodegroup_version(eks: EksNodegroups, clusterName: str, nodegroupName: str, version: str | None = None,
                             releaseVersion: str | None = None, launchTemplate: dict[str, Any] | None = None,
                             force: bool = False, clientRequestToken: str | None = None) -> dict[str, Any]:
    record = eks.nodegroup(clusterName, nodegroupName)
    update = _retried(record, clientRequestToken)
    if update is None:
        _check_not_busy(record, "VersionUpdate")
        source_version = _source_version(eks, record, launchTemplate)
        ami = _custom_ami_target(eks, record, version, releaseVersion, source_version) if record.custom_ami \
            else _target_ami(eks, record, version, releaseVersion)
        params = [{"type": "Version", "value": ami["kubernetes_version"]},
                  {"type": "ReleaseVersion", "value": record.release_of(ami)}]
        if launchTemplate is not None:
            params += [{"type": "LaunchTemplateName", "value": record.source_template["name"]},
                       {"type": "LaunchTemplateVersion", "value": str(source_version)}]
        update = Update("VersionUpdate", params, client_request_token=clientRequestToken)
        eks.start_version_update(record, update, Target(ami, source_version), bool(force))
    return {"update": update.to_api()}


def _scaling(record: ManagedNodegroup, desired: int, scaling: dict[str, Any]) -> tuple[int, int, int]:
    low, high = scaling.get("minSize", record.min_size), scaling.get("maxSize", record.max_size)
    wanted = scaling.get("desiredSize", min(max(desired, low), high))
    if not low <= wanted <= high or high < 1:
        raise _invalid(f"Invalid scaling configuration: minSize {low}, desiredSize {wanted}, maxSize {high}: "
                       "minSize <= desiredSize <= maxSize must hold and maxSize must be at least 1.",  # sandbox
                       record)
    return low, high, wanted


def _update_config(record: ManagedNodegroup, config: dict[str, Any]) -> dict[str, Any]:
    """NodegroupUpdateConfig: maxUnavailable ("The maximum number is 100") or maxUnavailablePercentage (1..100),
    not both; updateStrategy DEFAULT or MINIMAL."""
    if "maxUnavailable" in config and "maxUnavailablePercentage" in config:
        raise _invalid("Only one of maxUnavailable and maxUnavailablePercentage can be specified.", record)  # sandbox
    if not 1 <= config.get("maxUnavailable", 1) <= 100 or not 1 <= config.get("maxUnavailablePercentage", 1) <= 100:
        raise _invalid("maxUnavailable must be between 1 and 100, maxUnavailablePercentage between 1 and 100.",
                       record)  # sandbox wording
    merged = dict(record.update_config)
    if "maxUnavailable" in config or "maxUnavailablePercentage" in config:
        merged.pop("maxUnavailable", None)
        merged.pop("maxUnavailablePercentage", None)
    merged.update(config)
    return merged


def update_nodegroup_config(eks: EksNodegroups, clusterName: str, nodegroupName: str,
                            scalingConfig: dict[str, Any] | None = None, updateConfig: dict[str, Any] | None = None,
                            clientRequestToken: str | None = None, **others: Any) -> dict[str, Any]:
    record = eks.nodegroup(clusterName, nodegroupName)
    update = _retried(record, clientRequestToken)
    if update is not None:
        return {"update": update.to_api()}
    unmodelled = sorted(k for k, v in others.items() if v is not None)
    if unmodelled:
        raise _invalid(f"the sandbox does not model {', '.join(unmodelled)} updates", record)
    if scalingConfig is None and updateConfig is None:
        raise _invalid("No changes were requested.", record)  # sandbox wording
    _check_not_busy(record, "ConfigUpdate")
    new_config = None if updateConfig is None else _update_config(record, updateConfig)
    sizes = None if scalingConfig is None else _scaling(record, eks.desired_size(record), scalingConfig)
    params: list[dict[str, str]] = []
    if new_config is not None:
        record.update_config = new_config
        params += [{"type": _CONFIG_PARAMS[key], "value": str(value)} for key, value in updateConfig.items()]
    if sizes is not None:
        eks.resize(record, *sizes)
        params += [{"type": kind, "value": str(value)} for kind, value in zip(("MinSize", "MaxSize", "DesiredSize"),
                                                                              sizes)]
    update = Update("ConfigUpdate", params, client_request_token=clientRequestToken)
    eks.start_config_update(record, update)
    return {"update": update.to_api()}


OPERATIONS = {
    "ListNodegroups": list_nodegroups,
    "DescribeNodegroup": describe_nodegroup,
    "UpdateNodegroupVersion": update_nodegroup_version,
    "UpdateNodegroupConfig": update_nodegroup_config,
    "DescribeUpdate": describe_update,
    "ListUpdates": list_updates,
}
