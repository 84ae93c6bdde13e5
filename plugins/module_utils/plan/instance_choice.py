# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which instances an upgrade acts on: which are old and which new (K2, W2), which old ones go next (U5), which
ones a scale-in removes (U6), and whether the new ones are good (U3).

Pure: every function takes the instance records of ``instances.join_instances_nodes`` (dicts with instance_id,
availability_zone, lifecycle_state, launch_template_version, instance_type, image_id, node_name, ready,
unschedulable, labels) and returns plain values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import random

# Lifecycle states of instances that are leaving the group: neither old nor new any more. Terminating:Retained is
# an instance whose termination lifecycle action was abandoned in a group whose instance lifecycle policy retains it
# (Auto Scaling user guide, "Manage retained instances"): it is still listed, and its EC2 instance runs, but
# "Retained instances do not count toward your Amazon EC2 Auto Scaling group's desired capacity".
LEAVING_STATES = frozenset([
    "Terminating", "Terminating:Wait", "Terminating:Proceed", "Terminating:Retained", "Terminated",
    "Detaching", "Detached",
])


def _label(instance: Mapping[str, Any], key: str) -> str | None:
    return (instance.get("labels") or {}).get(key)


def is_new_instance(instance: Mapping[str, Any], target_lt_version: int | str | None, target_image_id: str | None,
                    override_images: Mapping[str, str] | None = None) -> bool:
    """True when what is known of the instance matches every given target (and something is known): from AWS (its
    launch template version, its AMI), never from its node's labels (SPEC K2), which only some kinds of node group
    set. An instance about which nothing can be proven new counts as old. One whose type a mixed instances override launches from an AMI or template of its own
    is new when it runs what that override launches now (``override_images``: {instance type: AMI}; SPEC W2).
    """
    if target_lt_version is None and target_image_id is None:
        raise ValueError("split_old_new needs target_lt_version or target_image_id")
    override_image = (override_images or {}).get(instance.get("instance_type") or "")
    if override_image:
        return instance.get("image_id") == override_image
    compared = False
    for known, target in ((instance.get("launch_template_version"), target_lt_version),
                          (instance.get("image_id"), target_image_id)):
        if known is None or target is None:
            continue
        if str(known) != str(target):
            return False
        compared = True
    return compared


def split_old_new(instances: Iterable[dict[str, Any]], target_lt_version: int | str | None,
                  target_image_id: str | None, override_images: Mapping[str, str] | None = None
                  ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(old, new) instance records for the target; instances leaving the group are in neither."""
    old, new = [], []
    for instance in instances:
        if instance.get("lifecycle_state") in LEAVING_STATES:
            continue
        new_one = is_new_instance(instance, target_lt_version, target_image_id, override_images)
        (new if new_one else old).append(instance)
    return old, new


def pick_batch(old: Iterable[dict[str, Any]], size: int, rng: random.Random) -> list[dict[str, Any]]:
    """Up to ``size`` old instances to replace next (SPEC U5: at random, drawn with ``rng``).

    Instances already cordoned come first: after a crash mid-batch the rerun finishes those nodes
    instead of cordoning more and leaving the others unschedulable. Within each group the choice is random;
    sorting by id first makes it depend on ``rng`` only, not on the order of ``old``.
    """
    if size < 0:
        raise ValueError("size must be >= 0")
    batch = []
    for cordoned in (True, False):
        group = sorted((i for i in old if bool(i.get("unschedulable")) == cordoned), key=lambda i: i["instance_id"])
        batch.extend(rng.sample(group, min(size - len(batch), len(group))))
    return batch


def _az_key(instance: Mapping[str, Any]) -> str:
    return instance.get("availability_zone") or ""


def _scale_in_preference(instance: Mapping[str, Any], group_version: int | str | None) -> tuple[bool, bool, bool, int, str]:
    # Within an AZ: nodes already cordoned (a resumed scale-in finishes those), then nodes not on the version
    # the group launches (after a rollback these are the failed new ones), then nodes that are not serving,
    # then the oldest launch template version.
    version = instance.get("launch_template_version")
    return (
        not instance.get("unschedulable"),
        group_version is not None and version is not None and int(version) == int(group_version),
        bool(instance.get("ready")) and bool(instance.get("node_name")),
        -1 if version is None else int(version),
        instance["instance_id"],
    )


def scale_in_choice(instances: Iterable[dict[str, Any]], count: int, group_version: int | str | None = None) -> list[dict[str, Any]]:
    """``count`` instances to remove, AZ-balanced (SPEC U6): always from the AZ with the most left.

    ``group_version``: the launch template version the group launches now; within an AZ, instances on another
    version go first, so a scale-in after a rollback removes the failed new nodes and keeps the old ones.
    """
    if count < 0:
        raise ValueError("count must be >= 0")
    by_az = {}
    for instance in instances:
        by_az.setdefault(_az_key(instance), []).append(instance)
    for members in by_az.values():
        members.sort(key=lambda instance: _scale_in_preference(instance, group_version))
    chosen = []
    while len(chosen) < count and any(by_az.values()):
        az = max(sorted(by_az), key=lambda name: len(by_az[name]))
        chosen.append(by_az[az].pop(0))
    return chosen


def _problem(instance: Mapping[str, Any], reason: str) -> dict[str, Any]:
    return {
        "availability_zone": instance.get("availability_zone"),
        "instance_id": instance.get("instance_id"),
        "node_name": instance.get("node_name"),
        "reason": reason,
    }


def check_new_nodes(nodes: Iterable[Mapping[str, Any]], azs_with_old_nodes: Iterable[str], expected_labels: Mapping[str, str]) -> list[dict[str, Any]]:
    """Problems that keep the scale-up from succeeding (SPEC U3); an empty list means it succeeded.

    ``nodes`` are the new instance records (joined with their nodes by providerID, SPEC K2);
    ``expected_labels`` the labels the node group's own tool sets ({} when it sets none, SPEC K1). Each problem
    is a dict naming availability_zone, instance_id, node_name (any may be None) and a reason.
    """
    problems = []
    ready_azs = set()
    for node in sorted(nodes, key=lambda n: (_az_key(n), n.get("instance_id") or "")):
        if not node.get("node_name"):
            problems.append(_problem(node, "instance has not registered as a Kubernetes node"))
            continue
        if not node.get("ready"):
            problems.append(_problem(node, "node is not Ready"))
            continue
        wrong = ["%s=%s (expected %s)" % (key, _label(node, key), value)
                 for key, value in sorted(expected_labels.items()) if _label(node, key) != value]
        if wrong:
            problems.append(_problem(node, "node has wrong labels: " + ", ".join(wrong)))
            continue
        ready_azs.add(_az_key(node))
    for az in sorted(set(azs_with_old_nodes) - ready_azs):
        problems.append({"availability_zone": az, "instance_id": None, "node_name": None,
                         "reason": "no new Ready node in this availability zone, which has old nodes"})
    return problems
