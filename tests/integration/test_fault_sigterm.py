# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""issue 10 (Done when: fault_aws_throttle, fault_sigterm): the `fault_sigterm` scenario run through
playbooks/upgrade_nodegroup.yml.

The scenario is about pods, not about the job: Deployment `stubborn` (2 replicas, no PDB) ignores SIGTERM and so
takes its whole terminationGracePeriodSeconds (250 s, x grace_period_scale 0.02 = 5 s in the sandbox) to stop.
The drain must evict with the pod's own grace period (SPEC D12) and wait until the pod is really gone (D15)
before the node's instance is terminated; a drain that moved on at the eviction would have the sandbox count
the still-terminating pod as lost. The upgrade must succeed with every node replaced, no pod lost, no PDB
violated, and one surge only.

While the playbook runs, a thread lists the stubborn pods every 0.2 s to see how long each took to stop: that
shows the fault at work (the scenario has no fault counter for it). (A job killed mid-run, as when AWX cancels
it, is test_crash_resume.py's subject.)
"""

from __future__ import annotations

import threading
import time

import pytest

from fault_upgrade import NODEGROUP, RUN_TIMEOUT, assert_upgraded, scenario_file, upgrade

SCENARIO = "fault_sigterm"
STUBBORN = "stubborn"
POLL_SECONDS = 0.2


class PodStops:
    """Lists the pods of one Deployment every POLL_SECONDS in a thread of its own; records, per pod, its node,
    the deletion grace period, when it was first seen terminating and when it was first seen gone."""

    def __init__(self, sandbox, namespace, app):
        self.core = sandbox.core_v1()
        self.namespace, self.selector = namespace, "app=%s" % app
        self.pods = {}
        self.error = None
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, name="pod-stops", daemon=True)

    def run(self):
        try:
            while not self.stopping.is_set():
                self.poll()
                time.sleep(POLL_SECONDS)
            self.poll()
        except Exception as exc:  # pylint: disable=broad-exception-caught  # reported by __exit__
            self.error = exc

    def poll(self):
        items = self.core.list_namespaced_pod(self.namespace, label_selector=self.selector).items
        now = time.time()
        present = set()
        for pod in items:
            uid = pod.metadata.uid
            present.add(uid)
            seen = self.pods.setdefault(uid, {"name": pod.metadata.name, "node": pod.spec.node_name,
                                              "grace": None, "terminating_at": None, "gone_at": None})
            if pod.metadata.deletion_timestamp is not None and seen["terminating_at"] is None:
                seen["terminating_at"] = now
                seen["grace"] = pod.metadata.deletion_grace_period_seconds
        for uid, seen in self.pods.items():
            if uid not in present and seen["gone_at"] is None:
                seen["gone_at"] = now

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc_info):
        self.stopping.set()
        self.thread.join(timeout=30)
        if self.error is not None and exc_info[0] is None:
            raise AssertionError("listing the %s pods failed: %r" % (self.selector, self.error))


@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_issue10_fault_sigterm_the_drain_waits_for_pods_that_ignore_sigterm(sandbox, tmp_path):
    """issue 10 (Done when: fault_aws_throttle, fault_sigterm): pods that use their whole grace period are
    evicted with it and waited for; the upgrade replaces every node with no pod lost and no PDB violated."""
    scenario = scenario_file(SCENARIO)
    [workload] = [w for w in scenario["workloads"] if w["name"] == STUBBORN]
    assert workload["ignore_sigterm"] is True
    grace = workload["termination_grace_period_seconds"]
    stop_seconds = grace * scenario["timings"]["grace_period_scale"]
    before = sandbox.report()
    old_nodes = {node["name"] for node in before["nodegroups"][NODEGROUP]["nodes"]}
    on_old_nodes = {pod.metadata.name for pod in sandbox.core_v1().list_namespaced_pod(
        "default", label_selector="app=" + STUBBORN).items if pod.spec.node_name in old_nodes}
    assert len(on_old_nodes) == workload["replicas"]

    with PodStops(sandbox, "default", STUBBORN) as stops:
        result, report = upgrade(sandbox, tmp_path / "upgrade-report.json")
    after = sandbox.report()
    assert_upgraded(sandbox, before, after, report, result.stdout)

    stopped = [pod for pod in stops.pods.values() if pod["gone_at"] is not None]
    print("stubborn pods stopped: %s; phases: %s" % (
        [(pod["name"], pod["node"], pod["grace"], round(pod["gone_at"] - pod["terminating_at"], 1))
         for pod in stopped if pod["terminating_at"] is not None], report["phase_seconds"]))
    # The stubborn pods of the old nodes were evicted (none stayed, none was lost), each with its own grace
    # period, and each took about that long to stop: the node waited for it (pods_lost is empty above).
    assert on_old_nodes <= {pod["name"] for pod in stopped}
    for pod in stopped:
        assert pod["terminating_at"] is not None, "%s was deleted at once" % pod["name"]
        assert pod["grace"] == grace, pod
        # the poll can see the start of the termination late by one interval, or more on a loaded machine
        assert pod["gone_at"] - pod["terminating_at"] >= stop_seconds - 2, pod
    assert after["workloads"]["default/" + STUBBORN]["ready"] == workload["replicas"]
