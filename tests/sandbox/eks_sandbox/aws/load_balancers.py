# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A scenario's load balancers, made in moto as their controllers make them on AWS (issue 11 item 3).

- `type: target_group`: what the AWS Load Balancer Controller makes for a Service of type LoadBalancer with
  instance targets: a Network Load Balancer, a TCP listener forwarding to a target group on the Service's node port,
  the target group's `deregistration_delay.timeout_seconds` attribute, and its tracking tags. Source:
  kubernetes-sigs/aws-load-balancer-controller `pkg/deploy/tracking/provider.go` ("`elbv2.k8s.aws/cluster:
  cluster-name` will be applied on all AWS resources", "`service.k8s.aws/stack: stack-id` ... `namespace/serviceName`",
  "`service.k8s.aws/resource: resource-id` ... For LoadBalancer, `resource-id` will be `LoadBalancer` ... For
  TargetGroup, `resource-id` will be `namespace/serviceName:servicePort`").
- `type: classic`: what the in-tree service controller's AWS cloud provider makes: a Classic ELB with a TCP listener
  to the node port, tagged `kubernetes.io/cluster/<cluster>: owned` and `kubernetes.io/service-name:
  <namespace>/<name>` (kubernetes/cloud-provider-aws `pkg/providers/v1/tags.go` TagNameKubernetesClusterPrefix,
  ResourceLifecycleOwned; `aws.go` TagNameKubernetesService, set in `aws_loadbalancer.go`), connection draining
  disabled unless the Service's `aws-load-balancer-connection-draining-enabled` annotation enables it (`aws.go`:
  `ConnectionDraining: {Enabled: false}` by default; the scenario's `deregistration_delay` plays the annotations).

The objects are created directly in moto's backends (no HTTP: as for the rest of the seed, nothing to record).
"""

from __future__ import annotations

from typing import Any

from moto.elb.models import ELBBackend
from moto.elbv2.models import ELBv2Backend

__all__ = ["seed_load_balancers", "LBC_CLUSTER_TAG", "LBC_STACK_TAG", "LBC_RESOURCE_TAG",
           "SERVICE_NAME_TAG", "cluster_tag"]

LBC_CLUSTER_TAG = "elbv2.k8s.aws/cluster"
LBC_STACK_TAG = "service.k8s.aws/stack"
LBC_RESOURCE_TAG = "service.k8s.aws/resource"
SERVICE_NAME_TAG = "kubernetes.io/service-name"
SERVICE_PORT = 80


def cluster_tag(cluster: str) -> str:
    return f"kubernetes.io/cluster/{cluster}"


def seed_load_balancers(elbv2: ELBv2Backend, elb: ELBBackend, scenario: dict[str, Any], vpc_id: str,
                        subnets: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Create every load balancer of the scenario; returns {name: {type, arn (target groups), port}}."""
    cluster = scenario["cluster"]["name"]
    made = {}
    for balancer in scenario["load_balancers"]:
        if balancer["type"] == "target_group":
            made[balancer["name"]] = _target_group(elbv2, cluster, balancer, vpc_id, list(subnets.values()))
        else:
            made[balancer["name"]] = _classic(elb, cluster, balancer, scenario["availability_zones"],
                                              list(subnets.values()))
    return made


def _target_group(elbv2: ELBv2Backend, cluster: str, balancer: dict[str, Any], vpc_id: str,
                  subnet_ids: list[str]) -> dict[str, Any]:
    service = balancer["service"]
    stack = {LBC_CLUSTER_TAG: cluster, LBC_STACK_TAG: service}
    port = balancer["node_port"] if balancer["target_type"] == "instance" else SERVICE_PORT
    target_group = elbv2.create_target_group(
        balancer["name"], vpc_id=vpc_id, protocol="TCP", port=port, target_type=balancer["target_type"],
        tags=[{"Key": k, "Value": v} for k, v in
              {**stack, LBC_RESOURCE_TAG: f"{service}:{SERVICE_PORT}"}.items()])
    elbv2.modify_target_group_attributes(
        target_group.arn, {"deregistration_delay.timeout_seconds": str(balancer["deregistration_delay"])})
    load_balancer = elbv2.create_load_balancer(
        balancer["name"], security_groups=[], subnet_ids=subnet_ids, scheme="internet-facing",
        loadbalancer_type="network", tags=[{"Key": k, "Value": v} for k, v in
                                           {**stack, LBC_RESOURCE_TAG: "LoadBalancer"}.items()])
    load_balancer.activate()
    elbv2.create_listener(load_balancer.arn, "TCP", str(SERVICE_PORT), None, None,
                          [{"Type": "forward", "TargetGroupArn": target_group.arn}])
    return {"type": "target_group", "arn": target_group.arn, "port": port}


def _classic(elb: ELBBackend, cluster: str, balancer: dict[str, Any], zones: list[str],
             subnet_ids: list[str]) -> dict[str, Any]:
    load_balancer = elb.create_load_balancer(
        balancer["name"], zones=zones, subnets=subnet_ids, scheme="internet-facing",
        ports=[{"Protocol": "TCP", "LoadBalancerPort": SERVICE_PORT, "InstancePort": balancer["node_port"]}])
    load_balancer.add_tag(cluster_tag(cluster), "owned")
    load_balancer.add_tag(SERVICE_NAME_TAG, balancer["service"])
    if balancer["deregistration_delay"] is not None:
        load_balancer.attributes["connection_draining"] = {"enabled": True,
                                                           "timeout": balancer["deregistration_delay"]}
    return {"type": "classic", "arn": None, "port": balancer["node_port"]}
