# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""AwsSim: the sandbox's AWS side (moto in server mode, corrected, seeded from a scenario)."""

from __future__ import annotations

import ipaddress
import os
import threading
import time
from typing import Any

import boto3
from botocore.config import Config
from moto.autoscaling.models import FakeAutoScalingGroup, autoscaling_backends
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ec2.models import ec2_backends
from moto.eks.models import eks_backends
from moto.elb.models import elb_backends
from moto.elbv2.models import elbv2_backends
from moto.moto_api._internal import moto_api_backend
from moto.ssm.models import ssm_backends

from ..eks import EksNodegroups, EksRouter
from .capacity import CapacityReconciler, launch_template_version_of
from .instance_refresh import advance_refreshes, describe_instance_refreshes
from .owners import Owner, owner_of
from .load_balancers import seed_load_balancers
from .moto_patches import LIVE_LIFECYCLE_STATES, apply_moto_corrections, suspended_process_names
from .seed import VPC_CIDR, seed_amis, seed_cluster, seed_network, seed_self_managed_nodegroup, seed_ssm_parameters
from .server import AwsRequestMiddleware, LockedMotoServer

__all__ = ["AwsSim", "DUMMY_CREDENTIALS", "TERMINATED_RETENTION_SECONDS"]

# moto accepts any credentials; these map to its default account.
DUMMY_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}

# instances() keeps reporting a terminated instance this long (the interface promises at least 60 s).
TERMINATED_RETENTION_SECONDS = 120.0


class AwsSim:
    """moto's server on 127.0.0.1 plus what the AWS services do on their own (see capacity.py).

    Every request moto serves, and every instances()/tick()/asg_view() call, holds `lock`. moto's state is
    process-wide and start() resets it, so a process runs one AwsSim at a time. A sandbox of several clusters runs
    one AwsSim per cluster: the first starts the server, the others join it (start(server_of=...)) and share its
    lock; the first AwsSim of each region plays EC2 and Auto Scaling for the whole region (region_leader).
    """

    _running: "AwsSim | None" = None  # moto's state is process-wide: one started AwsSim at a time
    _running_lock = threading.Lock()

    def __init__(self, scenario: dict[str, Any], recorder: Any, faults: Any, launch_retry_seconds: float = 1.0):
        self.scenario = scenario
        self.recorder = recorder
        self.faults = faults
        self.lock = threading.RLock()
        self.region = scenario["region"]
        self.endpoint_url: str | None = None
        self._server: LockedMotoServer | None = None
        self._launch_retry_seconds = launch_retry_seconds
        self._reconciler: CapacityReconciler | None = None
        self.eks: EksNodegroups | None = None  # EKS's managed node groups (made in start, with moto's fresh state)
        # Filled when the node groups are seeded: each tool names its Auto Scaling group its own way.
        self._asg_by_nodegroup: dict[str, str] = {}
        self._nodegroup_by_asg: dict[str, str] = {}
        self._seed_versions: dict[str, int] = {}
        # The infrastructure as code that owns each self-managed node group, and what its apply does (owners.py).
        self._owners: dict[str, Owner] = {}
        self._clients: dict[tuple[str, str], Any] = {}
        # The scenario's load balancers as seeded: {name: {type, arn (target groups), port}}.
        self.load_balancers: dict[str, dict[str, Any]] = {}
        self.eks_router: EksRouter | None = None  # the server's: which cluster answers an EKS node-group request
        self.region_leader = True  # False when another cluster's AwsSim plays EC2 and Auto Scaling in this region
        self._region_leaders: dict[str, AwsSim] = {}  # the server's AwsSim: the leader of each region
        self._vpcs_by_region: dict[str, int] = {}  # the server's AwsSim: how many clusters each region has
        # Each cluster of a region its own VPC range (10.<n>.0.0/16, the first cluster's 10.0.0.0/16), so that node
        # names (ip-<address>.<region>.compute.internal) tell a region's clusters apart.
        self.vpc_cidr = VPC_CIDR

    # ------------------------------------------------------------------------------------------- lifecycle

    def start(self, server_of: "AwsSim | None" = None, calls_recorder: Any = None) -> str:
        """Apply the moto corrections, reset moto's state and serve it on a free port; returns the URL. AWS calls are
        recorded on `calls_recorder` (default: this AwsSim's recorder). With `server_of` (a started AwsSim), serve
        this cluster through that one's server instead (_join)."""
        if server_of is not None:
            return self._join(server_of)
        with AwsSim._running_lock:
            if AwsSim._running is not None:
                raise RuntimeError("another AwsSim is running in this process (moto's state is process-wide): "
                                   "stop it first")
            AwsSim._running = self
        apply_moto_corrections()
        # moto's ~1300 public AMIs per region would only slow every launch (moto looks the AMI up) and
        # blur AMI searches: the sandbox's AMIs are the scenario's.
        os.environ.setdefault("MOTO_EC2_LOAD_DEFAULT_AMIS", "false")
        with self.lock:
            moto_api_backend.reset()
            self._reconciler = CapacityReconciler(
                self._ec2, self.region, self.scenario["timings"], self.faults.launch_failure,
                self.recorder.event, self._launch_retry_seconds,
                not_visible_for=self.faults.instance_not_visible)
            self.eks = EksNodegroups(self.scenario, self.lock, self.recorder, self._ec2, self._autoscaling,
                                     eks_backends[DEFAULT_ACCOUNT_ID][self.region])
        self.eks_router = EksRouter(self.eks)
        self._region_leaders = {self.region: self}
        self._vpcs_by_region = {self.region: 1}
        recorder = calls_recorder or self.recorder
        self._server = LockedMotoServer(
            lambda app: AwsRequestMiddleware(app, self.lock, recorder, self.faults, self.eks_router))
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"
        return self.endpoint_url

    def _join(self, server: "AwsSim") -> str:
        """Serve one more cluster through `server`'s moto server (moto holds every region): its lock, its request
        middleware (EKS node-group requests are routed to this cluster's EksNodegroups by region and cluster name),
        and, in a region it already serves, its region leader's capacity reconciler."""
        self.lock = server.lock
        self.endpoint_url = server.endpoint_url
        leader = server._region_leaders.setdefault(self.region, self)
        self.region_leader = leader is self
        taken = server._vpcs_by_region.get(self.region, 0)
        server._vpcs_by_region[self.region] = taken + 1
        self.vpc_cidr = str(ipaddress.IPv4Network(VPC_CIDR).network_address + (taken << 16)) + "/16"
        with self.lock:
            self._reconciler = CapacityReconciler(
                self._ec2, self.region, self.scenario["timings"], self.faults.launch_failure,
                self.recorder.event, self._launch_retry_seconds,
                not_visible_for=self.faults.instance_not_visible) if self.region_leader else leader._reconciler
            self.eks = EksNodegroups(self.scenario, self.lock, self.recorder, self._ec2, self._autoscaling,
                                     eks_backends[DEFAULT_ACCOUNT_ID][self.region])
        server.eks_router.add(self.eks)
        return self.endpoint_url

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None
        with AwsSim._running_lock:
            if AwsSim._running is self:
                AwsSim._running = None

    def __enter__(self) -> "AwsSim":
        self.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def client(self, service: str, **config: Any) -> Any:
        """A boto3 client for `service` on this sandbox (botocore Config options as keyword arguments);
        clients are made once per service and configuration."""
        key = (service, repr(sorted(config.items())))
        if key not in self._clients:
            self._clients[key] = boto3.client(service, endpoint_url=self.endpoint_url, region_name=self.region,
                                              config=Config(**config) if config else None, **DUMMY_CREDENTIALS)
        return self._clients[key]

    @property
    def cluster_arn(self) -> str:
        """The EKS cluster's ARN (moto's and EKS's form: arn:aws:eks:<region>:<account>:cluster/<name>)."""
        return f"arn:aws:eks:{self.region}:{DEFAULT_ACCOUNT_ID}:cluster/{self.scenario['cluster']['name']}"

    @property
    def _ec2(self) -> Any:
        return ec2_backends[DEFAULT_ACCOUNT_ID][self.region]

    @property
    def _autoscaling(self) -> Any:
        return autoscaling_backends[DEFAULT_ACCOUNT_ID][self.region]

    @property
    def elbv2(self) -> Any:
        """moto's ELBv2 backend (the load balancer controllers work on it directly, holding `lock`)."""
        return elbv2_backends[DEFAULT_ACCOUNT_ID][self.region]

    @property
    def elb(self) -> Any:
        """moto's Classic ELB backend."""
        return elb_backends[DEFAULT_ACCOUNT_ID][self.region]

    # ------------------------------------------------------------------------------------------- seeding

    def seed(self, kube_url: str, kube_ca_pem: str | None) -> None:
        """Create the scenario's VPC, AMIs, SSM parameters, EKS cluster and node groups, and bring each node
        group's initial instances up (running at once: the cluster exists before the test starts)."""
        scenario = self.scenario
        cluster = scenario["cluster"]["name"]
        eks = eks_backends[DEFAULT_ACCOUNT_ID][self.region]
        with self.lock:
            vpc_id, subnets = seed_network(self._ec2, cluster, scenario["availability_zones"], self.vpc_cidr)
            if self.region_leader:  # the scenario's AMIs and SSM parameters exist once in each region
                seed_amis(self._ec2, scenario["amis"], scenario["availability_zones"][0])
                seed_ssm_parameters(ssm_backends[DEFAULT_ACCOUNT_ID][self.region], scenario["amis"])
            seed_cluster(eks, scenario, vpc_id, list(subnets.values()), kube_url, kube_ca_pem)
            self.load_balancers = seed_load_balancers(self.elbv2, self.elb, scenario, vpc_id, subnets)
            now = time.monotonic()
            for nodegroup in scenario["nodegroups"]:
                if nodegroup["kind"] == "managed":
                    group = self.eks.create_nodegroup(nodegroup, subnets, kube_url, kube_ca_pem)
                else:
                    group = seed_self_managed_nodegroup(self._ec2, self._autoscaling, scenario, nodegroup, subnets,
                                                        kube_url, kube_ca_pem)
                self._asg_by_nodegroup[nodegroup["name"]] = group.name
                self._nodegroup_by_asg[group.name] = nodegroup["name"]
                self._seed_versions[nodegroup["name"]] = launch_template_version_of(group)
                owner = owner_of(nodegroup, group, self.ami_id(nodegroup["ami"]))
                if owner is not None:
                    self._owners[nodegroup["name"]] = owner
                self._reconciler.reconcile(group, now)
                for state in group.instance_states:
                    self._reconciler.mark_running(state.instance, now)

    def ami_id(self, ami: str) -> str:
        """The id of one of the scenario's AMIs, given by name or id (ValueError when it is neither)."""
        for spec in self.scenario["amis"]:
            if ami in (spec["name"], spec["id"]):
                return spec["id"]
        raise ValueError(f"no AMI {ami!r} in the scenario")

    def apply_owner(self, nodegroup: str, ami: str | None = None, instance_refresh: bool | None = None) -> list[str]:
        """The owner's apply (terraform apply, CloudFormation stack update) of a self-managed node group, with its
        code's AMI and instance refresh setting changed as given; returns what it did (owners.py). ValueError for a
        node group no infrastructure as code owns here."""
        owner = self._owners.get(nodegroup)
        if owner is None:
            raise ValueError(f"node group {nodegroup!r} has no infrastructure-as-code owner in the sandbox "
                             "(kind self_managed only: terraform or cloudformation convention)")
        with self.lock:
            done = owner.apply(self.ami_id(ami) if ami else None, instance_refresh)
        self.recorder.event("owner_apply", nodegroup=nodegroup, tool=owner.tool, done=done)
        return done

    # ------------------------------------------------------------------------------------------- ticking

    def tick(self) -> None:
        """Advance instance states, fire due autoscaler faults, let EKS work on its node groups, end the lifecycle
        actions whose timeout passed, run instance refreshes, reconcile every group's desired capacity (EC2 and Auto
        Scaling: for the whole region, by its leader only)."""
        with self.lock:
            now = time.monotonic()
            if self.region_leader:
                self._reconciler.advance_instances(now)
            self._fire_autoscaler_faults()
            self.eks.tick()
            if not self.region_leader:
                return
            for group in list(self._autoscaling.autoscaling_groups.values()):
                self._reconciler.advance_lifecycle_actions(group, now)
                advance_refreshes(group, launch_template_version_of(group))
                self._reconciler.reconcile(group, now)

    def _fire_autoscaler_faults(self) -> None:
        for nodegroup, asg_name in self._asg_by_nodegroup.items():
            group = self._autoscaling.autoscaling_groups.get(asg_name)
            if group is None:
                continue
            increase = self.faults.autoscaler_increase(nodegroup, self._old_nodes_gone(nodegroup, group))
            if increase > 0:
                self._scale_up_as_autoscaler(nodegroup, group, increase)

    def _old_nodes_gone(self, nodegroup: str, group: FakeAutoScalingGroup) -> bool:
        seed_version = self._seed_versions.get(nodegroup)
        return not any(
            s.lifecycle_state in LIVE_LIFECYCLE_STATES
            and getattr(s.instance, "sandbox_launch_template", (None, None))[1] == seed_version
            for s in group.instance_states)

    def _scale_up_as_autoscaler(self, nodegroup: str, group: FakeAutoScalingGroup, increase: int) -> None:
        """What the cluster autoscaler does: SetDesiredCapacity (MaxSize raised first when needed, so the
        sandbox's fault can always apply)."""
        desired = (group.desired_capacity or 0) + increase
        if group.max_size is not None and desired > group.max_size:
            group.max_size = desired
        self._autoscaling.set_desired_capacity(group.name, desired)
        self.recorder.event("autoscaler_scale_up", nodegroup=nodegroup, asg=group.name, increase=increase,
                            desired=desired)

    # ------------------------------------------------------------------------------------------- views

    def instances(self) -> list[dict[str, Any]]:
        """Every instance of every node-group ASG (terminated ones for TERMINATED_RETENTION_SECONDS)."""
        now = time.monotonic()
        result = []
        with self.lock:
            for reservation in self._ec2.reservations.values():
                for instance in reservation.instances:
                    group = getattr(instance, "autoscaling_group", None)
                    nodegroup = self._nodegroup_by_asg.get(group.name) if group is not None else None
                    if nodegroup is None:
                        continue
                    state = instance._state.name
                    if state == "terminated" and now - instance.sandbox_state_since > TERMINATED_RETENTION_SECONDS:
                        continue
                    template, version = getattr(instance, "sandbox_launch_template", (None, None))
                    user_data = instance.user_data
                    result.append({
                        "instance_id": instance.id, "availability_zone": instance.placement.zone,
                        "state": state, "image_id": instance.image_id,
                        "launch_template_id": template.id if template is not None else None,
                        "launch_template_version": version, "asg_name": group.name, "nodegroup": nodegroup,
                        "private_dns_name": instance.sandbox_private_dns_name,
                        "launched_at": getattr(instance, "sandbox_launched_at", None),
                        "instance_type": instance.instance_type,
                        "user_data": user_data.decode() if user_data else ""})
        return result

    def state_since(self, instance_id: str) -> float | None:
        """When (time.monotonic) the instance entered its current EC2 state (None: unknown instance)."""
        with self.lock:
            instance = self._ec2.get_instance_by_id(instance_id)
            return getattr(instance, "sandbox_state_since", None) if instance is not None else None

    def asg_view(self, nodegroup: str) -> dict[str, Any]:
        with self.lock:
            group = self._autoscaling.autoscaling_groups[self._asg_by_nodegroup[nodegroup]]
            template = group.ec2_launch_template
            return {"name": group.name, "min": group.min_size, "max": group.max_size,
                    "desired": group.desired_capacity,
                    "suspended_processes": suspended_process_names(group),
                    "tags": {tag["Key"]: tag["Value"] for tag in group.tags},
                    "launch_template": {"id": template.id if template is not None else None,
                                        "version": group.launch_template_version},
                    # A mixed instances group's policy, and its live Spot instances (aws/mixed_instances.py).
                    "mixed_instances_policy": group.mixed_instances_policy,
                    "spot_instances": sorted(s.instance.id for s in group.instance_states
                                             if getattr(s.instance, "sandbox_spot", False)
                                             and s.lifecycle_state in LIVE_LIFECYCLE_STATES),
                    # Instance refreshes, newest first (moto_patches (m)): what replaced nodes besides the upgrade.
                    "instance_refreshes": [{"status": refresh["Status"],
                                            "percentage_complete": refresh["PercentageComplete"]}
                                           for refresh in describe_instance_refreshes(group, None)]}
