# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 27 item 2 on the sandbox, through the upgrade playbook: a CloudWatch alarm of alarm_names set to ALARM
while the upgrade runs (SetAlarmState, as an operator's test would; the sandbox's CloudWatch is moto's) stops the run
at its next safe point, the batch under way finished and no later one started; the run fails with AlarmTriggered,
nothing lost, and once the alarm is back to OK the rerun finishes. An alarm CloudWatch does not know is refused
before any change."""

from __future__ import annotations

import json

from nodegroup_state import call_counts, changes_by_the_collection, workers_asg
from sandbox_helpers import REPO_ROOT, module_sandbox, run_playbook, running_playbook
from scenarios import two_az_workers
from upgrade_runs import assert_upgraded, journal_phase, other_ami

ALARMS = two_az_workers("alarms", 10, [{"kind": "Deployment", "name": "web", "replicas": 3, "pdb": {"max_unavailable": 1}}])
ALARMS["nodegroups"][0]["desired_capacity"] = 4
alarms_sandbox = module_sandbox(ALARMS)
PLAYBOOK = REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml"


def extra_vars(report_path, **extra):
    return dict({"cluster_name": "alarms", "nodegroup_name": "workers", "kubernetes_version": "1.30",
                 "max_unavailable": 1, "drain_timeout": 60, "post_drain_wait": 1, "node_ready_timeout": 120,
                 "alarm_names": ["web-5xx"], "upgrade_report_path": str(report_path)}, **extra)


def put_alarm(sandbox):
    sandbox.client("cloudwatch").put_metric_alarm(
        AlarmName="web-5xx", MetricName="HTTPCode_Target_5XX_Count", Namespace="AWS/ApplicationELB",
        Statistic="Sum", Period=60, EvaluationPeriods=1, Threshold=10.0, ComparisonOperator="GreaterThanThreshold")


def test_issue27_item2_an_alarm_cloudwatch_does_not_know_is_refused_before_any_change(alarms_sandbox, tmp_path):
    before = call_counts(alarms_sandbox)
    result = run_playbook(alarms_sandbox, PLAYBOOK, extra_vars(tmp_path / "report.json", alarm_names=["web-5xxx"]))
    assert result.returncode != 0
    error = json.loads((tmp_path / "report.json").read_text())["error"]
    assert (error["code"], error["parameter"]) == ("InvalidParameter", "alarm_names"), error
    assert "no alarm named web-5xxx" in error["msg"]
    assert changes_by_the_collection(before, call_counts(alarms_sandbox)) == {}


def test_issue27_item2_an_alarm_in_alarm_stops_the_run_at_its_next_safe_point_and_the_rerun_finishes(
        alarms_sandbox, tmp_path):
    put_alarm(alarms_sandbox)
    asg = workers_asg(alarms_sandbox)
    sizes = (asg["MinSize"], asg["MaxSize"], asg["DesiredCapacity"])
    _current, target = other_ami(alarms_sandbox)
    with running_playbook(alarms_sandbox, PLAYBOOK, extra_vars(tmp_path / "stopped.json")) as run:
        output = []
        for line in run.stdout:
            output.append(line)
            if line.startswith("batch 1/4 started"):
                alarms_sandbox.client("cloudwatch").set_alarm_state(
                    AlarmName="web-5xx", StateValue="ALARM", StateReason="5xx above 10 per minute")
        assert run.wait(timeout=600) != 0, "".join(output)[-4000:]
    report = json.loads((tmp_path / "stopped.json").read_text())
    assert report["status"] == "failed" and report["error"]["code"] == "AlarmTriggered", report["error"]
    assert "Stopped before batch 2: CloudWatch alarm web-5xx in ALARM (web-5xx: 5xx above 10 per minute)" \
        in report["error"]["msg"]
    assert [b["batch"] for b in report["batches"]] == [1]
    assert journal_phase(alarms_sandbox) == "upgrade"
    assert alarms_sandbox.report()["pods_lost"] == [] and alarms_sandbox.report()["pdb_violations"] == []

    alarms_sandbox.client("cloudwatch").set_alarm_state(AlarmName="web-5xx", StateValue="OK", StateReason="fixed")
    resumed = run_playbook(alarms_sandbox, PLAYBOOK, extra_vars(tmp_path / "resumed.json"))
    assert resumed.returncode == 0, resumed.stdout[-3000:]
    assert_upgraded(alarms_sandbox, target, sizes)
