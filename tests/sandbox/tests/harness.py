# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared by the contract tests: an in-process sandbox, boto3 clients on it, and response validation against
botocore's EKS model. Scenarios come from eks_sandbox.kube.testing.scenario (fast timings), with EKS_CLUSTER's
cluster and AMIs for the EKS tests."""

from __future__ import annotations

import contextlib
import tempfile
import time
from typing import Any, Callable, Iterator

import boto3
from botocore import xform_name
from botocore.stub import Stubber
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config

from eks_sandbox.kube.testing import scenario
from eks_sandbox.runtime import AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, Sandbox

OLD_AMI = "amazon-eks-node-al2023-x86_64-standard-1.29-v20240101"
NEW_AMI = "amazon-eks-node-al2023-x86_64-standard-1.30-v20240201"
AMIS = [{"name": OLD_AMI, "kubernetes_version": "1.29"}, {"name": NEW_AMI, "kubernetes_version": "1.30"}]
# scenario(**EKS_CLUSTER, nodegroups=..., workloads=...): cluster "eks" on 1.30 with the AMIS (node groups start
# on the 1.29 one).
EKS_CLUSTER = {"name": "eks", "cluster": {"name": "eks"}, "amis": AMIS}


@contextlib.contextmanager
def running(loaded: dict[str, Any]) -> Iterator[Sandbox]:
    """A started, ready sandbox (moto is process-wide: one at a time)."""
    sandbox = Sandbox(loaded, tempfile.mkdtemp(prefix="eks-sandbox-"))
    try:
        sandbox.start()
        assert sandbox.wait_ready(30), sandbox.readiness_detail
        yield sandbox
    finally:
        sandbox.stop()


def one_group(name: str, ami: str, desired_capacity: int) -> dict[str, Any]:
    """scenario(): cluster ``name`` with one node group ``workers`` of ``ami`` (eks-node-1.30, or broken-1.30 whose
    nodes never get Ready) at ``desired_capacity``, sized 0-4."""
    return scenario(name=name, cluster={"name": name}, nodegroups=[
        {"name": "workers", "ami": ami, "min_size": 0, "max_size": 4, "desired_capacity": desired_capacity}])


@contextlib.contextmanager
def running_with_kube(loaded: dict[str, Any]) -> Iterator[Sandbox]:
    """running(loaded), with the kubernetes python client's CoreV1Api and AppsV1Api on its kubeconfig as ``core``
    and ``apps``."""
    with running(loaded) as sandbox:
        api_client = k8s_config.new_client_from_config(config_file=str(sandbox.kubeconfig_path))
        sandbox.core, sandbox.apps = k8s_client.CoreV1Api(api_client), k8s_client.AppsV1Api(api_client)
        yield sandbox


@contextlib.contextmanager
def aws_running(scenario: dict[str, Any]) -> Iterator[Any]:
    """seeded_aws(scenario) for the block, stopped afterwards."""
    sim = seeded_aws(scenario)
    try:
        yield sim
    finally:
        sim.stop()


def seeded_aws(scenario: dict[str, Any]) -> Any:
    """The AWS side alone (eks_sandbox.aws.AwsSim) of a loaded scenario, started, seeded and with its faults armed;
    the caller ticks it and stops it."""
    from eks_sandbox.aws import AwsSim
    from eks_sandbox.faults import Faults
    from eks_sandbox.recorder import Recorder

    faults = Faults(scenario["faults"], scenario["seed"], armed=False)
    sim = AwsSim(scenario, Recorder(), faults, launch_retry_seconds=0.05)
    sim.start()
    sim.seed("https://127.0.0.1:6443", None)
    faults.arm()
    return sim


def asg(sim: Any) -> str:
    """The Auto Scaling group of the node group "workers" of a seeded_aws()."""
    return sim.asg_view("workers")["name"]


def describe_group(sim: Any) -> dict[str, Any]:
    """DescribeAutoScalingGroups' answer for it, checked against botocore's model."""
    autoscaling = sim.client("autoscaling")
    return valid(autoscaling, "DescribeAutoScalingGroups", autoscaling.describe_auto_scaling_groups(
        AutoScalingGroupNames=[asg(sim)]))["AutoScalingGroups"][0]


def client(sandbox: Sandbox, service: str) -> Any:
    return boto3.client(service, endpoint_url=sandbox.aws_endpoint, region_name=sandbox.scenario["region"],
                        aws_access_key_id=AWS_ACCESS_KEY_ID, aws_secret_access_key=AWS_SECRET_ACCESS_KEY)


def valid(eks: Any, operation: str, response: dict[str, Any]) -> dict[str, Any]:
    """`response` (a parsed boto3 response), checked against the operation's output shape by botocore's Stubber
    (which validates every response it is given: types, required members, ranges) and for enum values, which the
    Stubber does not check; returns it."""
    body = {k: v for k, v in response.items() if k != "ResponseMetadata"}
    Stubber(eks).add_response(xform_name(operation), body)
    _check_enums(eks.meta.service_model.operation_model(operation).output_shape, body, operation)
    return response


def _check_enums(shape: Any, value: Any, path: str) -> None:
    if shape.type_name == "structure":
        for name, member in shape.members.items():
            if name in value:
                _check_enums(member, value[name], f"{path}.{name}")
    elif shape.type_name == "list":
        for index, item in enumerate(value):
            _check_enums(shape.member, item, f"{path}[{index}]")
    elif shape.type_name == "map":
        for key, item in value.items():
            _check_enums(shape.value, item, f"{path}.{key}")
    elif shape.type_name == "string" and shape.enum:
        assert value in shape.enum, f"{path}: {value!r} is not one of {shape.enum}"


def tick_until(sim: Any, condition: Callable[[], Any], timeout: float = 5.0, watch: Callable[[], Any] = lambda: None
               ) -> None:
    """Tick a seeded_aws() until ``condition()`` holds (``watch()`` after each tick); AssertionError after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition not reached in time"
        sim.tick()
        watch()
        time.sleep(0.01)


def wait_for(condition: Callable[[], Any], timeout: float = 20.0, interval: float = 0.05) -> Any:
    """condition()'s first truthy value; fails after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(interval)


def wait_for_update(eks: Any, cluster: str, nodegroup: str, update_id: str, timeout: float = 25.0,
                    watch: Callable[[], None] = lambda: None) -> dict[str, Any]:
    """DescribeUpdate until the update is no longer InProgress (calling `watch` at every poll); the update."""
    def finished() -> dict[str, Any] | None:
        watch()
        update = valid(eks, "DescribeUpdate", eks.describe_update(
            name=cluster, updateId=update_id, nodegroupName=nodegroup))["update"]
        return update if update["status"] != "InProgress" else None
    return wait_for(finished, timeout)
