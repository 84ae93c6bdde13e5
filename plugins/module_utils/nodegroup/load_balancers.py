# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which of the cluster's load balancers still hold an instance (SPEC B3, issue 11 item 3).

The cluster's load balancers are found by the tags their controllers put on them:
- ELBv2 target groups: ``elbv2.k8s.aws/cluster=<cluster>`` (AWS Load Balancer Controller,
  kubernetes-sigs/aws-load-balancer-controller ``pkg/deploy/tracking/provider.go``) or ``kubernetes.io/cluster/<cluster>``
  (the in-tree service controller's Network Load Balancers, kubernetes/cloud-provider-aws ``pkg/providers/v1/tags.go``);
- Classic Load Balancers: ``kubernetes.io/cluster/<cluster>`` (the in-tree service controller).

An instance target is held from its registration until its deregistration has finished: DescribeTargetHealth lists
it ``draining`` for the group's deregistration delay (Application Load Balancers user guide, "Deregistration
delay"), and DescribeInstanceHealth lists a deregistering instance InService, "Instance deregistration currently in
progress.", while its connections drain (Classic Load Balancers user guide, "Configure connection draining"), and
"Instance is not currently registered with the LoadBalancer." once it has left; the instances are asked for by id,
since a listing without ids describes only those "currently registered" (API reference, DescribeInstanceHealth). A
target group of ``ip`` targets holds pods, not nodes: they leave it through the drain itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
import functools
import threading
import time

from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import elb, elbv2
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import ACCESS_DENIED, UpgradeError
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup.kinds import cluster_tag

LBC_CLUSTER_TAG = "elbv2.k8s.aws/cluster"
DELAY_ATTRIBUTE = "deregistration_delay.timeout_seconds"
# ELBv2 TargetHealth states: every one but ``unused`` (not registered, or the instance is stopped or terminated)
# means the load balancer still counts the target (API reference, TargetHealth).
NOT_HELD = "unused"
# DescribeInstanceHealth descriptions (API reference, InstanceState).
CLASSIC_DRAINING = "Instance deregistration currently in progress"
CLASSIC_NOT_REGISTERED = "Instance is not currently registered"
# The nodes of a batch wait side by side, each asking about its instance: an answer younger than this serves them
# all, so a batch of n nodes costs one DescribeTargetHealth per target group and poll, not n (ELB API rate limits).
SHARED_ANSWER_SECONDS = 1.0
# A load balancer deleted after it was found (its Service deleted, its target group replaced) holds nothing; a
# deletion between the listing and DescribeTags makes the tags call fail as a whole, and the discovery is retried.
GONE_CODES = frozenset(["TargetGroupNotFound", "LoadBalancerNotFound", "AccessPointNotFound"])
DISCOVERY_ATTEMPTS = 3


def _of_cluster(tags: dict[str, str], cluster_name: str, lbc_tag: bool) -> bool:
    return cluster_tag(cluster_name) in tags or (lbc_tag and tags.get(LBC_CLUSTER_TAG) == cluster_name)


class ClusterLoadBalancers:
    """The cluster's target groups and Classic Load Balancers, found once; which of them hold an instance now."""

    def __init__(self, elbv2_client: Any, elb_client: Any, target_groups: list[dict[str, Any]],
                 classic: list[dict[str, Any]], clock: Callable[[], float] = time.monotonic) -> None:
        self._elbv2 = elbv2_client
        self._elb = elb_client
        self.target_groups = target_groups
        self.classic = classic
        self._clock = clock
        self._lock = threading.Lock()
        self._answers = {}   # target group ARN or load balancer name -> (asked at, its targets or instances)
        self._delays = {}
        self._released = {}  # target group ARN or load balancer name -> instance ids seen not held by it
        self.unreadable = {}  # name -> why the credentials may not read who it holds

    @classmethod
    def discover(cls, elbv2_client: Any, elb_client: Any, cluster_name: str,
                 attached: Iterable[str] = ()) -> ClusterLoadBalancers:
        """Every target group and Classic Load Balancer tagged for ``cluster_name`` (two listings, and their tags),
        but those in ``attached``: the target group ARNs and load balancer names attached to the node group's Auto
        Scaling group, which no controller deregisters and which Auto Scaling itself drains when it terminates an
        instance (Auto Scaling user guide, "Elastic Load Balancing": it waits for the deregistration delay)."""
        for attempt in range(DISCOVERY_ATTEMPTS):
            try:
                found = cls._discover(elbv2_client, elb_client, cluster_name, set(attached))
            except UpgradeError as err:
                if not _gone(err) or attempt == DISCOVERY_ATTEMPTS - 1:
                    raise
            else:
                return found
        raise AssertionError("unreachable")

    @classmethod
    def _discover(cls, elbv2_client: Any, elb_client: Any, cluster_name: str, attached: set[str]) -> ClusterLoadBalancers:
        groups = [group for group in elbv2.describe_target_groups(elbv2_client)
                  if group["TargetGroupArn"] not in attached]
        group_tags = elbv2.describe_tags(elbv2_client, [group["TargetGroupArn"] for group in groups])
        balancers = [balancer for balancer in elb.describe_load_balancers(elb_client)
                     if balancer["LoadBalancerName"] not in attached]
        balancer_tags = elb.describe_tags(elb_client, [balancer["LoadBalancerName"] for balancer in balancers])
        return cls(elbv2_client, elb_client,
                   [group for group in groups
                    if _of_cluster(group_tags.get(group["TargetGroupArn"], {}), cluster_name, lbc_tag=True)],
                   [balancer for balancer in balancers
                    if _of_cluster(balancer_tags.get(balancer["LoadBalancerName"], {}), cluster_name, lbc_tag=False)])

    @property
    def found(self) -> bool:
        """Whether the cluster has any load balancer this finds; when not, nothing better than a fixed wait is known."""
        return bool(self.target_groups or self.classic)

    def describe(self) -> str:
        instance = sum(1 for group in self.target_groups if group.get("TargetType") == "instance")
        return "%d target group(s) (%d of instance targets) and %d Classic Load Balancer(s)" % (
            len(self.target_groups), instance, len(self.classic))

    def holding(self, instance_ids: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        """{instance id: the load balancers that still hold it}, each {kind, name, state, delay_seconds}: registered,
        or deregistered and still draining. An instance held by none is absent.

        A load balancer seen not holding an instance is not asked about it again: an instance that has the
        exclude-from-external-load-balancers label (or is cordoned) is not registered again by the controllers. One
        whose targets the credentials may not read (AccessDenied) is left out and named in ``unreadable``: whoever
        waits on it then knows nothing better than the fixed wait."""
        wanted = set(instance_ids)
        held = {}
        for group in self.target_groups:
            arn = group["TargetGroupArn"]
            if group.get("TargetType") != "instance" or wanted <= self._released.get(arn, set()):
                continue
            targets = self._readable(group["TargetGroupName"], arn, functools.partial(
                elbv2.describe_target_health, self._elbv2, arn))
            holds = set()
            for target in targets or []:
                state = (target.get("TargetHealth") or {}).get("State")
                if target["Target"]["Id"] in wanted and state != NOT_HELD:
                    holds.add(target["Target"]["Id"])
                    held.setdefault(target["Target"]["Id"], []).append(self._holder("target group", group, state))
            if targets is not None:
                self._release(arn, wanted - holds)
        ids = sorted(wanted)
        for balancer in self.classic:
            name = balancer["LoadBalancerName"]
            if wanted <= self._released.get(name, set()):
                continue
            instances = self._readable(name, (name, tuple(ids)), functools.partial(
                elb.describe_instance_health, self._elb, name, ids))
            holds = set()
            for instance in instances or []:
                description = instance.get("Description") or ""
                if instance["InstanceId"] not in wanted or description.startswith(CLASSIC_NOT_REGISTERED):
                    continue
                state = "draining" if description.startswith(CLASSIC_DRAINING) else instance.get("State")
                holds.add(instance["InstanceId"])
                held.setdefault(instance["InstanceId"], []).append(self._holder("Classic Load Balancer", balancer, state))
            if instances is not None:
                self._release(name, wanted - holds)
        return held

    def _release(self, key: str, instance_ids: set[str]) -> None:
        """Remember that the load balancer ``key`` was seen not holding ``instance_ids``."""
        with self._lock:
            self._released.setdefault(key, set()).update(instance_ids)

    def _readable(self, name: str, key: Any, describe: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]] | None:
        """The shared answer for ``key``, or None (and ``name`` in ``unreadable``) when AccessDenied refused it."""
        try:
            return self._shared(key, describe)
        except UpgradeError as err:
            if err.code != ACCESS_DENIED:
                raise
            with self._lock:
                self.unreadable[name] = err.msg
            return None

    def _shared(self, key: Any, describe: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """``describe()``'s answer, or the answer for ``key`` of less than SHARED_ANSWER_SECONDS ago (one caller asks
        at a time: the others wait for its answer)."""
        with self._lock:
            asked_at, answer = self._answers.get(key, (None, None))
            now = self._clock()
            if asked_at is None or now - asked_at >= SHARED_ANSWER_SECONDS:
                try:
                    answer = describe()
                except UpgradeError as err:
                    if not _gone(err):
                        raise
                    answer = []
                self._answers[key] = (now, answer)
            return answer

    def _holder(self, kind: str, balancer: dict[str, Any], state: str | None) -> dict[str, Any]:
        name = balancer.get("TargetGroupName") or balancer["LoadBalancerName"]
        return dict(kind=kind, name=name, state=state, delay_seconds=self._delay(kind, balancer))

    def _delay(self, kind: str, balancer: dict[str, Any]) -> int | None:
        """The target group's deregistration delay, or the Classic Load Balancer's connection draining timeout
        (0 when draining is off), read once; None when AWS did not say."""
        key = balancer.get("TargetGroupArn") or balancer["LoadBalancerName"]
        with self._lock:
            return self._read_delay(kind, key)

    def _read_delay(self, kind: str, key: str) -> int | None:
        if key not in self._delays:
            if kind == "target group":
                value = elbv2.describe_target_group_attributes(self._elbv2, key).get(DELAY_ATTRIBUTE)
                self._delays[key] = int(value) if value not in (None, "") else None
            else:
                draining = elb.describe_load_balancer_attributes(self._elb, key).get("ConnectionDraining") or {}
                self._delays[key] = int(draining.get("Timeout") or 0) if draining.get("Enabled") else 0
        return self._delays[key]


def _gone(err: UpgradeError) -> bool:
    return err.details.get("aws_error_code") in GONE_CODES


def longer_than(held: dict[str, list[dict[str, Any]]], seconds: int) -> list[dict[str, Any]]:
    """The load balancers of ``held`` ({instance id: holders}, as ``holding`` answers) whose deregistration delay is
    longer than ``seconds``, each once, by name."""
    slow = {}
    for holders in held.values():
        for holder in holders:
            if (holder["delay_seconds"] or 0) > seconds:
                slow[holder["name"]] = holder
    return [slow[name] for name in sorted(slow)]


def describe_holders(holders: Iterable[dict[str, Any]]) -> str:
    """'target group web-tg (draining, deregistration delay 300 s), ...' for a message."""
    return ", ".join("%s %s (%s%s)" % (holder["kind"], holder["name"], holder["state"],
                                       "" if holder["delay_seconds"] is None
                                       else ", deregistration delay %d s" % holder["delay_seconds"])
                     for holder in holders)


def attached_to(asg: dict[str, Any] | None) -> list[str]:
    """The target group ARNs and Classic Load Balancer names attached to an Auto Scaling group."""
    if not asg:
        return []
    return list(asg.get("TargetGroupARNs") or []) + list(asg.get("LoadBalancerNames") or [])


def find_cluster_load_balancers(aws: Callable[[str], Any], cluster_name: str, warn: Callable[[str], None],
                                asg: dict[str, Any] | None = None) -> ClusterLoadBalancers | None:
    """The cluster's load balancers (``aws`` makes a client for a service name) but those attached to ``asg``, the
    node group's Auto Scaling group; None with a warning when the credentials may not list them: the drain then
    waits the fixed post-drain wait, as before B3."""
    try:
        return ClusterLoadBalancers.discover(aws("elbv2"), aws("elb"), cluster_name, attached_to(asg))
    except UpgradeError as err:
        if err.code != ACCESS_DENIED:
            raise
        warn("the load balancers of cluster %s could not be listed (%s): each drained node waits the fixed "
             "post_drain_wait instead of its load balancers (docs/iam-policy.json lists the permissions)"
             % (cluster_name, err.msg))
        return None
