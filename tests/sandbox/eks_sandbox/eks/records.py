# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What EKS remembers about a managed node group and its updates, and how DescribeNodegroup / DescribeUpdate
show it (the Nodegroup and Update shapes of botocore's EKS model, data/eks/2017-11-01/service-2.json)."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CUSTOM_AMI", "ManagedNodegroup", "Update", "ami_type_of", "eks_taint", "IN_PROGRESS", "SUCCESSFUL", "FAILED",
           "ACTIVE", "UPDATING", "DEGRADED"]

# UpdateStatus and NodegroupStatus values (botocore EKS model).
IN_PROGRESS, SUCCESSFUL, FAILED = "InProgress", "Successful", "Failed"
ACTIVE, UPDATING, DEGRADED = "ACTIVE", "UPDATING", "DEGRADED"

# AMITypes for the scenario's AMI families (the SSM parameter path segments of the EKS user guide, "Retrieve
# recommended Amazon Linux AMI IDs": amazon-linux-2[-gpu|-arm64], amazon-linux-2023/<arch>/<variant>).
_AMI_TYPES = {
    "amazon-linux-2": "AL2_x86_64", "amazon-linux-2-gpu": "AL2_x86_64_GPU", "amazon-linux-2-arm64": "AL2_ARM_64",
    "amazon-linux-2023/x86_64/standard": "AL2023_x86_64_STANDARD",
    "amazon-linux-2023/arm64/standard": "AL2023_ARM_64_STANDARD",
    "amazon-linux-2023/x86_64/nvidia": "AL2023_x86_64_NVIDIA", "amazon-linux-2023/arm64/nvidia": "AL2023_ARM_64_NVIDIA",
    "amazon-linux-2023/x86_64/neuron": "AL2023_x86_64_NEURON",
    "bottlerocket/x86_64": "BOTTLEROCKET_x86_64", "bottlerocket/arm64": "BOTTLEROCKET_ARM_64",
    "windows/core-2019": "WINDOWS_CORE_2019_x86_64", "windows/full-2019": "WINDOWS_FULL_2019_x86_64",
    "windows/core-2022": "WINDOWS_CORE_2022_x86_64", "windows/full-2022": "WINDOWS_FULL_2022_x86_64",
    "windows/core-2025": "WINDOWS_CORE_2025_x86_64", "windows/full-2025": "WINDOWS_FULL_2025_x86_64",
}


# The scenario's launch_template for a node group whose own launch template names its AMI.
CUSTOM_AMI = "custom_ami"


def ami_type_of(family: str) -> str:
    if family not in _AMI_TYPES:
        raise ValueError(f"no EKS AMI type for the AMI family {family!r}")
    return _AMI_TYPES[family]


def eks_taint(taint: dict[str, str]) -> dict[str, str]:
    """A Kubernetes taint as the EKS API spells it (TaintEffect: NO_SCHEDULE, NO_EXECUTE, PREFER_NO_SCHEDULE)."""
    effect = "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(taint["effect"])).upper()
    return {"key": taint["key"], "value": taint.get("value") or "", "effect": effect}


@dataclass
class Update:
    """One asynchronous node-group update (the Update shape)."""

    type: str                               # VersionUpdate | ConfigUpdate
    params: list[dict[str, str]]            # [{type: UpdateParamType, value}]
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    status: str = IN_PROGRESS
    created_at: float = field(default_factory=time.time)
    errors: list[dict[str, Any]] = field(default_factory=list)
    client_request_token: str | None = None  # the request's idempotency token: a retried request gets this update

    def fail(self, code: str, message: str, resource_ids: list[str]) -> None:
        self.status = FAILED
        self.errors.append({"errorCode": code, "errorMessage": message, "resourceIds": list(resource_ids)})

    def to_api(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "type": self.type, "params": [dict(p) for p in self.params],
                "createdAt": self.created_at, "errors": [dict(e) for e in self.errors]}


@dataclass
class ManagedNodegroup:
    """EKS's record of one managed node group. `template_id`/`template_version` are the launch template (EKS's
    own eks-<uuid>) and version EKS last pointed the Auto Scaling group at; `source_template` is the user's
    launch template {id, name, version} for a node group created with one, else None."""

    name: str
    cluster: str
    uuid: str
    arn: str
    spec: dict[str, Any]                    # the scenario's node group
    version: str
    release_version: str
    ami: dict[str, Any]                     # the scenario AMI the nodes run
    subnets: list[str]
    node_role: str
    asg_name: str
    template_id: str
    template_version: int
    source_template: dict[str, Any] | None
    min_size: int
    max_size: int
    update_config: dict[str, Any]
    labels: dict[str, str]
    taints: list[dict[str, str]]            # EKS spelling
    status: str = ACTIVE
    health_issues: list[dict[str, Any]] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    modified_at: float = field(default_factory=time.time)
    updates: list[Update] = field(default_factory=list)
    capacity_type: str = "ON_DEMAND"

    @property
    def custom_ami(self) -> bool:
        """The user's launch template names the AMI (scenario launch_template custom_ami)."""
        return self.spec["launch_template"] == CUSTOM_AMI

    @property
    def ami_type(self) -> str:
        # Nodegroup.amiType: "If the node group was deployed using a launch template with a custom AMI, then this
        # is CUSTOM" (botocore's EKS model).
        return "CUSTOM" if self.custom_ami else ami_type_of(self.ami["family"])

    def release_of(self, ami: dict[str, Any]) -> str:
        """The releaseVersion EKS reports for nodes on ``ami``: Nodegroup.releaseVersion "If the node group was
        deployed using a launch template with a custom AMI, then this is the AMI ID that was specified in the launch
        template" (botocore's EKS model), else the EKS optimized AMI's release."""
        return ami["id"] if self.custom_ami else ami["release_version"]

    def in_progress(self) -> Update | None:
        return next((u for u in self.updates if u.status == IN_PROGRESS), None)

    def settle_status(self) -> None:
        """UPDATING while an update runs, else DEGRADED while a health issue lasts, else ACTIVE."""
        self.status = UPDATING if self.in_progress() else DEGRADED if self.health_issues else ACTIVE

    def to_api(self, desired_size: int) -> dict[str, Any]:
        """The Nodegroup shape; desiredSize is the Auto Scaling group's, as EKS reports it."""
        with_template = self.source_template is not None
        body: dict[str, Any] = {
            "nodegroupName": self.name, "nodegroupArn": self.arn, "clusterName": self.cluster,
            "version": self.version, "releaseVersion": self.release_version,
            "createdAt": self.created_at, "modifiedAt": self.modified_at, "status": self.status,
            "capacityType": self.capacity_type,
            "scalingConfig": {"minSize": self.min_size, "maxSize": self.max_size, "desiredSize": desired_size},
            "subnets": list(self.subnets), "amiType": self.ami_type, "nodeRole": self.node_role,
            "labels": dict(self.labels), "taints": [dict(t) for t in self.taints],
            "resources": {"autoScalingGroups": [{"name": self.asg_name}]},
            "health": {"issues": [dict(i, resourceIds=list(i["resourceIds"])) for i in self.health_issues]},
            "updateConfig": dict(self.update_config), "tags": dict(self.spec["tags"]),
        }
        # tags: the node group's own (CreateNodegroup's tags); EKS does not propagate them to the Auto Scaling group
        # or its instances (EKS user guide "Tagging your Amazon EKS resources").
        # botocore: instanceTypes and diskSize are null for a node group deployed with a launch template, and
        # launchTemplate is "the launch template that was used" (only then).
        if with_template:
            body["launchTemplate"] = {"name": self.source_template["name"], "version": str(
                self.source_template["version"]), "id": self.source_template["id"]}
        else:
            body["instanceTypes"] = [self.spec["instance_type"]]
            body["diskSize"] = 20  # CreateNodegroup's default disk size (botocore CreateNodegroupRequest.diskSize)
        return body
