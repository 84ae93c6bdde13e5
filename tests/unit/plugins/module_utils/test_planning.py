# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of the pure planning logic (SPEC U1-U3, U5, U6, S1-S4, C3)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import random
from collections import Counter

import math

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import instance_choice
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import launch_failures
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import parallelism
from ansible_collections.eksops.nodegroup.plugins.module_utils.plan import process_suspension
from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import (
    ASG_INSTANCE_LAUNCH_FAILURES,
    INSTANCE_LIMIT_EXCEEDED,
    INSUFFICIENT_FREE_ADDRESSES,
    INVALID_PARAMETER,
    NODE_CREATION_FAILURE,
    UpgradeError,
)

AZS = ["us-west-2a", "us-west-2b", "us-west-2c", "us-west-2d", "us-west-2e"]


def instance(instance_id, az="us-west-2a", lt_version=1, image="ami-old", node=True, ready=True,
             unschedulable=False, state="InService", labels=None):
    return {
        "instance_id": instance_id,
        "availability_zone": az,
        "lifecycle_state": state,
        "launch_template_version": lt_version,
        "image_id": image,
        "node_name": ("ip-%s.internal" % instance_id) if node else None,
        "ready": ready,
        "unschedulable": unschedulable,
        "labels": labels if labels is not None else {},
    }


# ---------------------------------------------------------------- U1 max_unavailable

class TestResolveMaxUnavailable:
    def test_u1_default_is_one(self):
        assert parallelism.resolve_max_unavailable(None, None, 40) == 1

    def test_u1_absolute_value_is_used_as_is(self):
        assert parallelism.resolve_max_unavailable(20, None, 6) == 20

    # Issue 10 item 4: 50 % of 5 nodes is 3, as EKS rounds (up).
    @pytest.mark.parametrize("pct,nodes,expected", [(50, 5, 3), (50, 6, 3), (33, 10, 4), (1, 10, 1), (100, 7, 7),
                                                    (10, 0, 1), (20, 10, 2)])
    def test_u1_percentage_of_node_count_rounds_up_at_least_one(self, pct, nodes, expected):
        assert parallelism.resolve_max_unavailable(None, pct, nodes) == expected

    @pytest.mark.parametrize("value", [0, 101, -1])
    def test_u1_out_of_range_max_unavailable_names_the_parameter(self, value):
        with pytest.raises(UpgradeError) as err:
            parallelism.resolve_max_unavailable(value, None, 6)
        assert err.value.code == INVALID_PARAMETER
        assert err.value.details["parameter"] == "max_unavailable"
        assert "max_unavailable" in err.value.msg and str(value) in err.value.msg

    @pytest.mark.parametrize("value", [0, 101])
    def test_u1_out_of_range_percentage_names_the_parameter(self, value):
        with pytest.raises(UpgradeError) as err:
            parallelism.resolve_max_unavailable(None, value, 6)
        assert err.value.details["parameter"] == "max_unavailable_percentage"
        assert "max_unavailable_percentage" in err.value.msg

    def test_u1_both_set_is_refused(self):
        with pytest.raises(UpgradeError) as err:
            parallelism.resolve_max_unavailable(2, 50, 6)
        assert "mutually exclusive" in err.value.msg

    def test_u1_bool_is_not_an_integer(self):
        with pytest.raises(UpgradeError):
            parallelism.resolve_max_unavailable(True, None, 6)

    @given(pct=st.integers(1, 100), nodes=st.integers(0, 1000))
    def test_u1_percentage_never_exceeds_nodes_or_drops_below_one(self, pct, nodes):
        value = parallelism.resolve_max_unavailable(None, pct, nodes)
        assert 1 <= value <= min(100, max(1, nodes))
        assert value == min(100, max(1, math.ceil(nodes * pct / 100)))

    def test_u1_percentage_is_capped_at_100_nodes(self):
        assert parallelism.resolve_max_unavailable(None, 50, 400) == 100


# ---------------------------------------------------------------- U2 rolling surge

class TestRollingSurge:
    def test_u2_seed_five_azs_max_unavailable_one_surges_ten(self):
        assert parallelism.rolling_surge(5, 1) == 10

    def test_u2_seed_max_unavailable_twenty_surges_twenty(self):
        assert parallelism.rolling_surge(5, 20) == 20

    @given(azs=st.integers(0, 30), unavailable=st.integers(0, 100))
    def test_u2_surge_is_larger_of_twice_azs_and_max_unavailable(self, azs, unavailable):
        surge = parallelism.rolling_surge(azs, unavailable)
        assert surge >= 2 * azs and surge >= unavailable
        assert surge in (2 * azs, unavailable)

    def test_u2_scaled_up_sizes_raise_max_only_when_needed(self):
        assert parallelism.scaled_up_sizes(3, 12, 12) == {"min_size": 3, "max_size": 12, "desired_capacity": 12}
        assert parallelism.scaled_up_sizes(3, 8, 12) == {"min_size": 3, "max_size": 12, "desired_capacity": 12}


# ---------------------------------------------------------------- old / new split

class TestSplitOldNew:
    def test_split_by_launch_template_version_and_image(self):
        old = instance("i-00000001", lt_version=1, image="ami-old")
        new = instance("i-00000002", lt_version=2, image="ami-new")
        mixed = instance("i-00000003", lt_version=2, image="ami-old")
        assert instance_choice.split_old_new([old, new, mixed], 2, "ami-new") == ([old, mixed], [new])

    def test_node_labels_are_no_evidence_of_what_an_instance_runs(self):
        """K2: only AWS says which launch template version and AMI an instance runs; labels claiming the
        target on a node AWS says nothing about leave it old (it is replaced, never skipped)."""
        labelled = instance("i-00000001", lt_version=None, image=None,
                            labels={"eks.amazonaws.com/sourceLaunchTemplateVersion": "7",
                                    "eks.amazonaws.com/nodegroup-image": "ami-new"})
        assert instance_choice.split_old_new([labelled], 7, "ami-new") == ([labelled], [])
        # and labels claiming an old version do not make an instance AWS knows to be new old
        relabelled = instance("i-00000002", lt_version=7, image="ami-new",
                              labels={"eks.amazonaws.com/sourceLaunchTemplateVersion": "1"})
        assert instance_choice.split_old_new([relabelled], 7, "ami-new") == ([], [relabelled])

    def test_versions_compare_as_numbers_whatever_their_type(self):
        item = instance("i-00000001", lt_version="7")
        assert instance_choice.split_old_new([item], 7, None) == ([], [item])
        assert instance_choice.split_old_new([item], "7", None) == ([], [item])
        assert instance_choice.split_old_new([item], 8, None) == ([item], [])

    def test_image_alone_decides_when_lt_version_unknown(self):
        item = instance("i-00000001", lt_version=None, image="ami-new")
        assert instance_choice.split_old_new([item], 3, "ami-new") == ([], [item])

    def test_nothing_known_counts_as_old(self):
        item = instance("i-00000001", lt_version=None, image=None)
        assert instance_choice.split_old_new([item], 3, "ami-new") == ([item], [])

    def test_leaving_instances_are_in_neither_list(self):
        gone = instance("i-00000001", state="Terminating")
        assert instance_choice.split_old_new([gone], 2, None) == ([], [])

    def test_a_retained_instance_is_neither_old_nor_new(self):
        """Auto Scaling user guide, "Manage retained instances": an instance in Terminating:Retained still runs and is
        still listed, but does not count toward the desired capacity; the group launches a replacement."""
        for version in (2, 3):
            retained = instance("i-00000001", state="Terminating:Retained", lt_version=2)
            assert instance_choice.split_old_new([retained], version, None) == ([], [])

    def test_needs_a_target(self):
        with pytest.raises(ValueError):
            instance_choice.split_old_new([instance("i-00000001")], None, None)


# ---------------------------------------------------------------- U5 batches

class TestPickBatch:
    @given(n=st.integers(0, 60), size=st.integers(0, 30), seed=st.integers(0, 2 ** 32))
    def test_u5_batch_size_is_min_of_size_and_old_and_members_are_distinct_old(self, n, size, seed):
        old = [instance("i-%08x" % i, unschedulable=(i % 7 == 0)) for i in range(n)]
        batch = instance_choice.pick_batch(old, size, random.Random(seed))
        assert len(batch) == min(size, n)
        ids = [b["instance_id"] for b in batch]
        assert len(set(ids)) == len(ids)
        assert all(b in old for b in batch)
        first = min(size, len([i for i in old if i["unschedulable"]]))
        assert all(b["unschedulable"] for b in batch[:first]) and not any(b["unschedulable"] for b in batch[first:])

    def test_u5_pick_is_random(self):
        old = [instance("i-%08x" % i) for i in range(20)]
        picks = {tuple(b["instance_id"] for b in instance_choice.pick_batch(old, 3, random.Random(seed)))
                 for seed in range(20)}
        assert len(picks) > 10

    def test_u5_resume_picks_at_random_among_cordoned_nodes_too(self):
        """A resumed run with more cordoned old nodes than the batch takes cordoned ones, at random (by seed)."""
        old = [instance("i-%08x" % i, unschedulable=(i % 2 == 0)) for i in range(16)]
        cordoned = set(i["instance_id"] for i in old if i["unschedulable"])
        picks = set()
        for seed in range(20):
            batch = [b["instance_id"] for b in instance_choice.pick_batch(old, 3, random.Random(seed))]
            assert set(batch) <= cordoned
            assert [b["instance_id"] for b in instance_choice.pick_batch(old, 3, random.Random(seed))] == batch
            picks.add(tuple(sorted(batch)))
        assert len(picks) > 10

    def test_u5_pick_does_not_depend_on_the_order_of_old(self):
        old = [instance("i-%08x" % i, unschedulable=(i < 5)) for i in range(12)]
        assert instance_choice.pick_batch(old, 7, random.Random(4)) == instance_choice.pick_batch(old[::-1], 7, random.Random(4))

    def test_u5_cordoned_nodes_are_finished_first(self):
        old = [instance("i-%08x" % i) for i in range(10)]
        old[4]["unschedulable"] = True
        for seed in range(10):
            batch = instance_choice.pick_batch(old, 2, random.Random(seed))
            assert batch[0]["instance_id"] == old[4]["instance_id"]


# ---------------------------------------------------------------- S1 surge settings

class TestValidateSurgeSettings:
    @pytest.mark.parametrize("surge,unavailable", [(1, 0), (0, 1), (10, 10), (2, 1)])
    def test_s1_valid(self, surge, unavailable):
        parallelism.validate_surge_settings(surge, unavailable)

    @pytest.mark.parametrize("surge,unavailable,parameter", [
        (0, 0, "max_surge"), (-1, 1, "max_surge"), (1, -1, "max_unavailable"), (15, 6, "max_surge"),
        (21, 0, "max_surge"), (0, 21, "max_unavailable"),
    ])
    def test_s1_invalid_names_the_parameter(self, surge, unavailable, parameter):
        with pytest.raises(UpgradeError) as err:
            parallelism.validate_surge_settings(surge, unavailable)
        assert err.value.code == INVALID_PARAMETER
        assert err.value.details["parameter"] == parameter
        assert parameter in err.value.msg

    def test_s1_cap_is_a_parameter_with_hard_limit_100(self):
        parallelism.validate_surge_settings(60, 40, cap=100)
        with pytest.raises(UpgradeError) as err:
            parallelism.validate_surge_settings(1, 0, cap=101)
        assert err.value.details["parameter"] == "surge_cap"


# ---------------------------------------------------------------- S3/S4 surge schedule

def simulate(node_count, max_surge, max_unavailable):
    """Walk the schedule instance by instance; return every group size and availability seen."""
    steps = parallelism.surge_steps(node_count, max_surge, max_unavailable)
    sizes, available, in_flight = [node_count], [node_count], []
    count, old, new = node_count, node_count, 0
    for step in steps:
        for dummy in range(step["launch"]):     # one instance at a time, as the ASG may launch them
            count += 1
            sizes.append(count)
        new += step["launch"]
        assert count == step["desired_after_launch"]
        # the batch is cordoned and drained together: all of it is unavailable until terminated
        available.append(count - step["replace"])
        in_flight.append(step["replace"])
        for dummy in range(step["replace"]):
            count -= 1
            old -= 1
            sizes.append(count)
        assert count == step["desired_after_terminate"]
    return steps, sizes, available, in_flight, old, new


class TestSurgeSteps:
    def test_s4_seed_n5_surge2_unavailable1(self):
        steps, sizes, available, in_flight, old, new = simulate(5, 2, 1)
        assert min(sizes) == 4 and max(sizes) == 7
        assert max(in_flight) == 3
        assert steps == [
            {"step": 1, "launch": 2, "desired_after_launch": 7, "replace": 3, "desired_after_terminate": 4},
            {"step": 2, "launch": 3, "desired_after_launch": 7, "replace": 2, "desired_after_terminate": 5},
        ]
        assert (old, new) == (0, 5)

    def test_s3_zero_surge_terminates_before_creating(self):
        steps = parallelism.surge_steps(4, 0, 1)
        assert steps[0]["launch"] == 0 and steps[0]["replace"] == 1
        assert steps[-1]["desired_after_terminate"] == 4

    def test_s2_balanced_default_replaces_one_at_a_time(self):
        steps = parallelism.surge_steps(3, 1, 0)
        assert [(s["launch"], s["replace"]) for s in steps] == [(1, 1)] * 3
        assert all(s["desired_after_launch"] == 4 and s["desired_after_terminate"] == 3 for s in steps)

    def test_empty_group_has_no_steps(self):
        assert parallelism.surge_steps(0, 1, 0) == []

    @pytest.mark.parametrize("surge,unavailable", [(0, 0), (-1, 2)])
    def test_refuses_invalid_settings(self, surge, unavailable):
        with pytest.raises(ValueError):
            parallelism.surge_steps(3, surge, unavailable)

    @settings(max_examples=400, deadline=None)
    @given(n=st.integers(1, 200), surge=st.integers(0, 20), unavailable=st.integers(0, 20))
    def test_s4_bounds_hold_for_every_instance_launched_or_terminated(self, n, surge, unavailable):
        if surge + unavailable == 0:
            return
        steps, sizes, available, in_flight, old, new = simulate(n, surge, unavailable)
        lower = max(0, n - unavailable)
        assert all(lower <= size <= n + surge for size in sizes)
        assert all(avail >= lower for avail in available), "more than max_unavailable nodes unavailable"
        assert all(0 < batch <= surge + unavailable for batch in in_flight if batch)
        assert (old, new) == (0, n)
        assert steps[-1]["desired_after_terminate"] == n
        assert all(s["launch"] + s["replace"] > 0 for s in steps)
        if surge == 0:
            assert steps[0]["launch"] == 0
        # no step could have replaced more without breaking a bound: the schedule is not needlessly slow
        assert len(steps) <= -(-n // (surge + unavailable)) + 2


class TestPlaceSurgeSteps:
    def test_each_step_names_its_desired_capacity_and_the_next_old_instances(self):
        steps = parallelism.place_surge_steps(parallelism.surge_steps(5, 2, 1), ["i-1", "i-2", "i-3", "i-4", "i-5"], 5)
        assert [(s["desired_capacity"], s["instance_ids"]) for s in steps] == [
            (7, ["i-1", "i-2", "i-3"]), (7, ["i-4", "i-5"])]
        assert steps[0]["desired_after_launch"] == 7 and steps[1]["replace"] == 2

    def test_nodes_already_replaced_by_a_crashed_run_are_counted_in_the_desired_capacity(self):
        """A rerun: 2 of the group's 5 nodes run the target already, 3 old ones are left."""
        steps = parallelism.place_surge_steps(parallelism.surge_steps(3, 1, 0), ["i-3", "i-4", "i-5"], 5)
        assert [(s["desired_capacity"], s["instance_ids"]) for s in steps] == [
            (6, ["i-3"]), (6, ["i-4"]), (6, ["i-5"])]

    def test_a_step_that_only_launches_replaces_no_instance(self):
        steps = parallelism.place_surge_steps(parallelism.surge_steps(2, 0, 1), ["i-1", "i-2"], 2)
        assert [(s["desired_capacity"], s["instance_ids"]) for s in steps] == [
            (2, ["i-1"]), (2, ["i-2"]), (2, [])]

    @settings(max_examples=200, deadline=None)
    @given(n=st.integers(0, 60), done=st.integers(0, 10), surge=st.integers(0, 5), unavailable=st.integers(0, 5))
    def test_every_old_instance_is_replaced_once_in_order(self, n, done, surge, unavailable):
        if surge + unavailable == 0:
            return
        old_ids = ["i-%d" % i for i in range(n)]
        steps = parallelism.place_surge_steps(parallelism.surge_steps(n, surge, unavailable), old_ids, n + done)
        assert [i for s in steps for i in s["instance_ids"]] == old_ids
        assert all(len(s["instance_ids"]) == s["replace"] for s in steps)
        assert all(s["desired_capacity"] == s["desired_after_launch"] + done for s in steps)


# ---------------------------------------------------------------- U6 AZ-balanced scale-in

class TestScaleInChoice:
    def test_u6_removes_from_the_fullest_az_first(self):
        items = ([instance("i-a%07d" % i, az="us-west-2a") for i in range(4)]
                 + [instance("i-b%07d" % i, az="us-west-2b") for i in range(3)]
                 + [instance("i-c%07d" % i, az="us-west-2c") for i in range(1)])
        chosen = instance_choice.scale_in_choice(items, 3)
        assert Counter(c["availability_zone"] for c in chosen) == {"us-west-2a": 2, "us-west-2b": 1}

    def test_u6_prefers_cordoned_within_an_az_so_a_resumed_scale_in_finishes_them(self):
        cordoned = instance("i-00000009", lt_version=3, unschedulable=True)
        others = [instance("i-0000000%d" % i, lt_version=2, ready=False) for i in range(3)]
        assert instance_choice.scale_in_choice(others + [cordoned], 1) == [cordoned]

    def test_u6_prefers_not_ready_then_oldest_version_within_an_az(self):
        ready_new = instance("i-00000001", lt_version=3)
        ready_old = instance("i-00000002", lt_version=2)
        not_ready = instance("i-00000003", lt_version=3, ready=False)
        assert [c["instance_id"] for c in instance_choice.scale_in_choice([ready_new, ready_old, not_ready], 2)] == [
            "i-00000003", "i-00000002"]

    def test_u6_after_a_rollback_removes_the_nodes_off_the_group_version_first(self):
        """U6 after a rollback (group pointed back at version 1): the failed new version-2 nodes go, even
        Ready, and the old version-1 nodes stay."""
        old = [instance("i-0000000%d" % i, lt_version=1) for i in range(3)]
        new = [instance("i-0000001%d" % i, lt_version=2) for i in range(3)]
        chosen = instance_choice.scale_in_choice(old + new, 3, group_version=1)
        assert sorted(c["instance_id"] for c in chosen) == sorted(i["instance_id"] for i in new)
        # the group on version 2 (a finished upgrade's scale-down): the old ones go
        chosen = instance_choice.scale_in_choice(old + new, 3, group_version=2)
        assert sorted(c["instance_id"] for c in chosen) == sorted(i["instance_id"] for i in old)

    @given(per_az=st.lists(st.integers(0, 12), min_size=1, max_size=5), count=st.integers(0, 70))
    def test_u6_scale_in_leaves_azs_balanced(self, per_az, count):
        items = [instance("i-%d%07d" % (a, i), az=AZS[a]) for a, n in enumerate(per_az) for i in range(n)]
        chosen = instance_choice.scale_in_choice(items, count)
        assert len(chosen) == min(count, len(items))
        assert len({c["instance_id"] for c in chosen}) == len(chosen)
        removed = Counter(c["availability_zone"] for c in chosen)
        left = {AZS[a]: n - removed[AZS[a]] for a, n in enumerate(per_az)}
        highest = max(left.values())
        for az in removed:
            assert left[az] >= highest - 1, (left, removed)


# ---------------------------------------------------------------- U3 new node validation

EKSCTL_LABELS = {"alpha.eksctl.io/nodegroup-name": "workers"}


def good_node(instance_id, az, image="ami-new", labels=None):
    """A new node of a plain self-managed group: the kubelet's own labels only (K1)."""
    return instance(instance_id, az=az, image=image, lt_version=2,
                    labels=dict({"topology.kubernetes.io/zone": az}, **(labels or {})))


class TestCheckNewNodes:
    def test_u3_all_azs_covered_and_ready_is_success(self):
        nodes = [good_node("i-00000001", "us-west-2a"), good_node("i-00000002", "us-west-2b")]
        assert instance_choice.check_new_nodes(nodes, {"us-west-2a", "us-west-2b"}, {}) == []

    def test_u3_az_without_a_new_ready_node_is_named(self):
        nodes = [good_node("i-00000001", "us-west-2a")]
        problems = instance_choice.check_new_nodes(nodes, ["us-west-2a", "us-west-2c"], {})
        assert problems == [{"availability_zone": "us-west-2c", "instance_id": None, "node_name": None,
                             "reason": "no new Ready node in this availability zone, which has old nodes"}]

    def test_u3_every_new_node_must_be_ready_and_registered(self):
        nodes = [good_node("i-00000001", "us-west-2a"), good_node("i-00000002", "us-west-2a"),
                 instance("i-00000003", az="us-west-2a", node=False)]
        nodes[1]["ready"] = False
        problems = instance_choice.check_new_nodes(nodes, ["us-west-2a"], {})
        assert [(p["instance_id"], p["reason"]) for p in problems] == [
            ("i-00000002", "node is not Ready"),
            ("i-00000003", "instance has not registered as a Kubernetes node")]

    def test_u3_a_self_managed_node_needs_no_label(self):
        """K1: terraform-aws-eks and the CloudFormation template label no node with its group; a node without
        any eks.amazonaws.com label is a good new node."""
        node = good_node("i-00000001", "us-west-2a")
        assert not any(key.startswith("eks.amazonaws.com/") for key in node["labels"])
        assert instance_choice.check_new_nodes([node], ["us-west-2a"], {}) == []

    def test_u3_the_labels_of_the_kinds_own_tool_are_required(self):
        """U3 for an eksctl group: its nodes carry alpha.eksctl.io/nodegroup-name; one without it (or with
        another group's) is not a good new node, and so its AZ has none."""
        good = good_node("i-00000001", "us-west-2a", labels=EKSCTL_LABELS)
        assert instance_choice.check_new_nodes([good], ["us-west-2a"], EKSCTL_LABELS) == []
        for labels, shown in (({}, "None"), ({"alpha.eksctl.io/nodegroup-name": "batch"}, "batch")):
            wrong = good_node("i-00000002", "us-west-2a", labels=labels)
            problems = instance_choice.check_new_nodes([wrong], ["us-west-2a"], EKSCTL_LABELS)
            assert len(problems) == 2  # the label, and so no good node in us-west-2a
            assert problems[0]["instance_id"] == "i-00000002"
            assert "alpha.eksctl.io/nodegroup-name=%s (expected workers)" % shown in problems[0]["reason"]

    def test_u3_every_wrong_label_is_named_in_a_stable_order(self):
        expected = {"b.example.com/role": "worker", "a.example.com/pool": "blue"}
        node = good_node("i-00000001", "us-west-2a", labels={"a.example.com/pool": "green"})
        [problem, _az] = instance_choice.check_new_nodes([node], ["us-west-2a"], expected)
        assert problem["reason"] == ("node has wrong labels: a.example.com/pool=green (expected blue), "
                                     "b.example.com/role=None (expected worker)")


# ---------------------------------------------------------------- C3

@pytest.mark.parametrize("now,set_,changed", [(6, 6, False), (8, 6, True), (5, 6, True), (6, None, False)])
def test_c3_autoscaler_changed(now, set_, changed):
    assert parallelism.autoscaler_changed(now, set_) is changed


@pytest.mark.parametrize("now,changed", [(10, False), (9, False), (8, False), (7, True), (11, True)])
def test_issue25_item1_resume_a_kill_among_decrementing_terminations_is_not_the_autoscaler(now, changed):
    """SPEC C3: two decrementing terminations under way (10 -> 8) leave the group anywhere from 10 to 8."""
    assert parallelism.autoscaler_changed(now, 10, 8) is changed


# ---------------------------------------------------------------- U3/U8 launch failures

def activity(message, status="Failed", description="Launching a new EC2 instance.  Status Reason: x",
             details=None):
    return {"ActivityId": "a-1", "StatusCode": status, "StatusMessage": message, "Description": description,
            "Details": json.dumps(details if details is not None else {"Availability Zone": "us-west-2b"})}


class TestLaunchFailure:
    @pytest.mark.parametrize("message,code", [
        ("We currently do not have sufficient m5.large capacity in the Availability Zone you requested "
         "(us-west-2b). InsufficientInstanceCapacity", NODE_CREATION_FAILURE),
        ("You have requested more instances than your current instance limit. InstanceLimitExceeded",
         INSTANCE_LIMIT_EXCEEDED),
        ("You have requested more vCPU capacity than your current vCPU limit allows for the instance bucket",
         INSTANCE_LIMIT_EXCEEDED),
        ("There are not enough free addresses in subnet 'subnet-1'. InsufficientFreeAddressesInSubnet",
         INSUFFICIENT_FREE_ADDRESSES),
        ("The image id '[ami-1]' does not exist. InvalidAMIID.NotFound", ASG_INSTANCE_LAUNCH_FAILURES),
        ("Something unexpected", NODE_CREATION_FAILURE),
    ])
    def test_u8_status_message_decides_the_code(self, message, code):
        failure = launch_failures.launch_failure(activity(message))
        assert failure["code"] == code
        assert failure["availability_zone"] == "us-west-2b"
        assert failure["message"] == message

    def test_successful_or_non_launch_activities_are_not_failures(self):
        assert launch_failures.launch_failure(activity("ok", status="Successful")) is None
        assert launch_failures.launch_failure(activity("x", description="Terminating EC2 instance: i-0123456789abcdef0"
                                                       )) is None

    def test_az_from_text_is_the_requested_one_not_the_suggested_alternatives(self):
        failure = launch_failures.launch_failure(activity(
            "We currently do not have sufficient m5.large capacity in the Availability Zone you requested "
            "(us-west-2b). You can currently get m5.large capacity by choosing us-west-2a, us-west-2c.",
            details={}))
        assert failure["availability_zone"] == "us-west-2b"
        assert failure["cause"] == "insufficient EC2 capacity"

    def test_az_and_instance_from_text_when_details_missing(self):
        failure = launch_failures.launch_failure(activity(
            "Instance i-0123456789abcdef0 failed in us-west-2c", details={},
            description="Launching a new EC2 instance: i-0123456789abcdef0"))
        assert failure["availability_zone"] == "us-west-2c"
        assert failure["instance_id"] == "i-0123456789abcdef0"


def failure(cause, az):
    return {"code": NODE_CREATION_FAILURE, "cause": cause, "availability_zone": az}


class TestPersistentLaunchFailure:
    """Issue 10 item 8: one transient capacity error does not end the wait; a persistent one, or one no retry
    fixes, does."""

    CAPACITY = "insufficient EC2 capacity"

    def test_a_single_capacity_error_keeps_the_wait_going(self):
        assert launch_failures.persistent_launch_failure([failure(self.CAPACITY, "us-west-2b")]) is None
        assert launch_failures.persistent_launch_failure([]) is None

    def test_three_capacity_errors_in_one_az_end_it(self):
        failures = [failure(self.CAPACITY, "us-west-2b"), failure(self.CAPACITY, "us-west-2a"),
                    failure(self.CAPACITY, "us-west-2b"), failure(self.CAPACITY, "us-west-2b")]
        assert launch_failures.persistent_launch_failure(failures[1:3]) is None
        assert launch_failures.persistent_launch_failure(failures) is failures[0]

    @pytest.mark.parametrize("cause", ["instance quota exceeded", "no free IP addresses in the subnet",
                                       "the launch template or its resources are invalid"])
    def test_an_error_no_retry_fixes_ends_it_at_once(self, cause):
        failures = [failure(self.CAPACITY, "us-west-2a"), failure(cause, "us-west-2c")]
        assert launch_failures.persistent_launch_failure(failures) is failures[1]


@pytest.mark.parametrize("now,pending,changed", [(5, 5, False), (6, 5, False), (4, 5, True), (7, 5, True)])
def test_c3_desired_capacity_pending_counts_as_ours(now, pending, changed):
    """SPEC C3: after a crash between a decrementing termination and the journal update the group is at the
    pending value (ours); any third value is still the autoscaler."""
    assert parallelism.autoscaler_changed(now, 6, pending) is changed


# ---------------------------------------------------------------- A1 suspended processes

class TestPlanSuspension:
    def test_a1_processes_suspended_by_someone_else_are_not_ours(self):
        ours, now = process_suspension.plan_suspension([], ["AZRebalance", "ReplaceUnhealthy"], ["AZRebalance"])
        assert (ours, now) == (["ReplaceUnhealthy"], ["ReplaceUnhealthy"])

    def test_a1_recorded_but_not_suspended_is_suspended_again(self):
        """A crash between the journal write and the suspension: the rerun suspends what the journal records."""
        ours, now = process_suspension.plan_suspension(["AZRebalance"], ["AZRebalance", "ScheduledActions"], ["ScheduledActions"])
        assert (ours, now) == (["AZRebalance"], ["AZRebalance"])

    def test_a1_rerun_changes_nothing(self):
        assert process_suspension.plan_suspension(["AZRebalance"], ["AZRebalance"], ["AZRebalance"]) == (["AZRebalance"], [])

    def test_a1_launch_and_terminate_are_refused(self):
        with pytest.raises(UpgradeError) as err:
            process_suspension.validate_suspend_processes(["AZRebalance", "Launch"])
        assert err.value.code == INVALID_PARAMETER and "Launch" in err.value.msg
        assert err.value.details["parameter"] == "suspend_processes"


def test_launch_failure_error_names_the_az_instance_and_cause():
    err = launch_failures.launch_failure_error(dict(code="InstanceLimitExceeded", cause="instance quota exceeded",
                                                    availability_zone="us-west-2b", instance_id=None,
                                                    message="vCPU limit", activity_id="x"), "workers")
    assert err.code == "InstanceLimitExceeded"
    assert "us-west-2b" in err.msg and "instance quota exceeded" in err.msg and "workers" in err.msg


def test_a_replacement_launch_failure_says_so_and_names_the_instance():
    err = launch_failures.launch_failure_error(dict(code="NodeCreationFailure", cause="insufficient EC2 capacity",
                                                    availability_zone=None, instance_id="i-0abc",
                                                    message="no capacity", activity_id="a-1"), "workers", what="a replacement")
    assert err.msg == ("Auto Scaling group workers failed to launch a replacement in an unknown Availability Zone "
                       "(instance i-0abc): insufficient EC2 capacity: no capacity")
    assert (err.details["instance_id"], err.details["activity_id"]) == ("i-0abc", "a-1")


def test_issue29_item2_an_override_s_instances_are_judged_against_what_the_override_launches():
    """W2: an instance whose type an override launches from an AMI (or template) of its own is new when it runs that
    AMI, whatever version of the group's template it came from; the others are judged against the group's target."""
    images = {"m6g.large": "ami-arm-new"}
    arm_new = dict(instance_id="i-1", instance_type="m6g.large", launch_template_version=7, image_id="ami-arm-new")
    arm_old = dict(instance_id="i-2", instance_type="m6g.large", launch_template_version=7, image_id="ami-arm-old")
    x86_new = dict(instance_id="i-3", instance_type="m5.large", launch_template_version=4, image_id="ami-new")
    x86_old = dict(instance_id="i-4", instance_type="m5.large", launch_template_version=3, image_id="ami-old")
    old, new = instance_choice.split_old_new([arm_new, arm_old, x86_new, x86_old], 4, "ami-new", images)
    assert [i["instance_id"] for i in old] == ["i-2", "i-4"] and [i["instance_id"] for i in new] == ["i-1", "i-3"]
    # Without overrides of their own, every instance is judged against the group's target.
    assert [i["instance_id"] for i in instance_choice.split_old_new([arm_new, x86_new], 4, "ami-new")[1]] == ["i-3"]
