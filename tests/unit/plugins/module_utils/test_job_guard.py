# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job guard (module_utils/host/job_guard.py, SPEC W5, issue 25 item 1): once the job is gone (ansible-playbook ended,
or the worker received SIGTERM/SIGINT), no destructive call starts; the lease is renewed no more and released."""

from __future__ import annotations

import signal
import time

import pytest

from ansible_collections.eksops.nodegroup.plugins.module_utils.host import job_guard
from ansible_collections.eksops.nodegroup.plugins.module_utils.nodegroup import lease
from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.api import KubeApi
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import autoscaling as autoscaling_api
from ansible_collections.eksops.nodegroup.plugins.module_utils.aws import eks as eks_api


@pytest.fixture
def parent_gone(monkeypatch):
    """The process's guard armed for parent 100, which has ended (the worker is reparented to 1)."""
    guard = job_guard.JobGuard(100, lambda: 1)
    monkeypatch.setattr(job_guard, "_GUARD", guard)
    return guard


class Refusing:
    """A client whose every call fails the test: the guard must refuse before the call."""

    def __getattr__(self, name):
        raise AssertionError("%s was called after the job was gone" % name)


def test_issue25_item1_the_job_lives_while_the_parent_is_the_one_that_started_the_task():
    assert job_guard.JobGuard(100, lambda: 100).gone() is None
    job_guard.JobGuard(100, lambda: 100).check("terminate instance i-1")


def test_issue25_item1_an_unarmed_guard_never_stops_a_module_process():
    assert job_guard.JobGuard(None, lambda: 1).gone() is None


def test_issue25_item1_a_changed_parent_means_the_job_is_gone():
    guard = job_guard.JobGuard(100, lambda: 1)
    assert guard.gone() == "ansible-playbook, process 100, has ended"
    with pytest.raises(job_guard.JobStopped) as stopped:
        guard.check("terminate instance i-1 through its Auto Scaling group")
    assert stopped.value.code == "JobStopped"
    assert "refused to terminate instance i-1" in stopped.value.msg
    assert stopped.value.details["refused"] == "terminate instance i-1 through its Auto Scaling group"


def test_issue25_item1_the_first_stop_signal_unwinds_the_work_and_later_ones_do_not():
    guard = job_guard.JobGuard(100, lambda: 100)
    with pytest.raises(job_guard.JobStopped) as stopped:
        guard.on_signal(signal.SIGTERM, None)
    assert guard.gone() == "the task received SIGTERM" and "stopped" in stopped.value.msg
    guard.on_signal(signal.SIGINT, None)  # the watchdog's, or a second Ctrl-C: recorded already
    assert guard.stopped_by == "SIGTERM"
    with pytest.raises(job_guard.JobStopped):
        guard.check("evict pod default/web-1")


def test_issue25_item1_a_stop_signal_after_the_work_returned_unwinds_nothing():
    guard = job_guard.JobGuard(100, lambda: 100)
    guard.quiet = True
    guard.on_signal(signal.SIGINT, None)
    assert guard.gone() == "the task received SIGINT"


@pytest.mark.parametrize("call", [
    lambda: autoscaling_api.terminate_instance_in_auto_scaling_group(Refusing(), "i-1", True),
    lambda: autoscaling_api.update_sizes(Refusing(), "workers", desired_capacity=3),
    lambda: autoscaling_api.set_launch_template(Refusing(), "workers", dict(LaunchTemplateId="lt-1", Version="2"),
                                                False),
    lambda: autoscaling_api.suspend_processes(Refusing(), "workers", ["AZRebalance"]),
    lambda: autoscaling_api.resume_processes(Refusing(), "workers", ["AZRebalance"]),
    lambda: autoscaling_api.set_instance_protection(Refusing(), "workers", ["i-1"], False),
    lambda: eks_api.update_nodegroup_version(Refusing(), dict(clusterName="c", nodegroupName="workers")),
    lambda: eks_api.update_nodegroup_config(Refusing(), dict(clusterName="c", nodegroupName="workers")),
], ids=["terminate", "sizes", "launch_template", "suspend", "resume", "protection", "eks_version", "eks_config"])
def test_issue25_item1_no_destructive_aws_call_starts_once_the_job_is_gone(parent_gone, call):
    with pytest.raises(job_guard.JobStopped):
        call()


def test_issue25_item1_reads_and_the_journal_still_go_once_the_job_is_gone(parent_gone):
    class Tags:
        def __init__(self):
            self.calls = []

        def create_or_update_tags(self, **kwargs):
            self.calls.append(kwargs)

    client = Tags()
    autoscaling_api.create_or_update_tags(client, "workers", {"eksops.nodegroup/run": "phase=upgrade"})
    assert len(client.calls) == 1


@pytest.mark.parametrize("method", ["evict", "delete"])
def test_issue25_item1_no_eviction_or_forced_deletion_starts_once_the_job_is_gone(parent_gone, method):
    api = KubeApi.__new__(KubeApi)  # remove_pod reaches no client before the guard
    api.core = Refusing()
    pod = dict(metadata=dict(name="web-1", namespace="default", uid="u-1"))
    with pytest.raises(job_guard.JobStopped) as stopped:
        api.remove_pod(pod, method, -1)
    assert "refused to %s pod default/web-1" % method in stopped.value.msg


def test_issue25_item1_the_heartbeat_renews_the_lease_no_more_once_the_job_is_gone(parent_gone):
    heartbeat = lease.Heartbeat(Refusing(), "workers", "run-1")
    assert heartbeat.beat() is False and not heartbeat.alive()


def test_issue25_item1_the_leases_held_are_released():
    class Group:
        def __init__(self, holder):
            self.tags = [dict(Key=lease.LEASE_TAG, Value=lease.lease_value(holder))]
            self.deleted = []

        def describe_auto_scaling_groups(self, **_kwargs):
            return dict(AutoScalingGroups=[dict(AutoScalingGroupName="workers", Tags=self.tags)])

        def delete_tags(self, Tags):  # noqa: N803 (botocore's argument name)
            self.deleted.extend(tag["Key"] for tag in Tags)

    ours, taken = Group("run-1"), Group("run-2")
    heartbeats = {("workers", "run-1"): lease.Heartbeat(ours, "workers", "run-1"),
                  ("other", "run-1"): lease.Heartbeat(taken, "other", "run-1")}
    assert lease.release_held(heartbeats) == ["workers"]
    assert ours.deleted == [lease.LEASE_TAG] and taken.deleted == []


def _watched(guard, **kwargs):
    """Armed with fakes; returns (signals sent, on_stuck calls, ends) once the watchdog has acted or 5 s passed."""
    sent, stuck, ended = [], [], []
    armed = job_guard.Armed(guard, on_stuck=lambda: stuck.append(True), kill=lambda pid, signum: sent.append(signum),
                            interval=0.01, end=ended.append, **kwargs)
    try:
        deadline = time.monotonic() + 5
        while not (ended or (sent and "grace" not in kwargs)) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        armed.disarm()
    assert signal.getsignal(signal.SIGTERM) != guard.on_signal  # the previous handler is back
    return sent, stuck, ended


def test_issue25_item1_the_watchdog_turns_the_parents_end_into_the_stop_signal():
    parents = iter([100] + [1] * 1000)
    sent, stuck, ended = _watched(job_guard.JobGuard(100, lambda: next(parents)))
    assert sent == [signal.SIGTERM] and stuck == [] and ended == []


def test_issue25_item1_a_worker_whose_work_does_not_unwind_is_ended_with_its_lease_released():
    guard = job_guard.JobGuard(100, lambda: 100)
    guard.stopped_by = "SIGTERM"  # the signal came, the main thread waits on a drain's thread
    sent, stuck, ended = _watched(guard, grace=0.05)
    assert sent == [] and stuck == [True] and ended == [1]


def _parent_seen_by_a_worker(queue):
    import os as _os

    queue.put((job_guard.started_by(), _os.getppid()))


def test_issue25_item1_a_worker_knows_the_ansible_playbook_that_forked_it():
    """A multiprocessing child (as ansible-core's WorkerProcess) names its parent as recorded at the fork: a parent
    killed before the task arms the guard is still seen gone."""
    import multiprocessing
    import os

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_parent_seen_by_a_worker, args=(queue,))
    child.start()
    started_by, parent_now = queue.get(timeout=30)
    child.join(30)
    assert started_by == parent_now == os.getpid()
