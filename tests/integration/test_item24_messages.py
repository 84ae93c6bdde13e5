# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 10 item 24, messages that mislead, on the sandbox through the upgrade playbook.

AWS's ValidationError to a request the group's state refuses (a race: here injected on the first
UpdateAutoScalingGroup, the setup phase pointing the group at the target version) was reported as
"InvalidParameter ... Nothing was changed for this reason; correct the parameter named above", though the run had
written its journal and suspended the group's processes, and no parameter was wrong. The bad-input table
(test_bad_inputs_playbooks.py) covers the advice on input errors, "Auto Scaling group not found" and the playbook's
variable names in type errors.
"""

from __future__ import annotations

import json

import pytest

from nodegroup_state import asg_name_of, image_id_by_name, workers_asg
from sandbox_helpers import REPO_ROOT, run_playbook, running_sandbox
from scenarios import AMI_130, two_az_workers

# Auto Scaling refuses the setup phase's UpdateAutoScalingGroup in the group's state, as it does while another
# update or scaling activity holds the group.
RACE = two_az_workers("race", 4, [{"kind": "Deployment", "name": "web", "replicas": 2, "pdb": {"max_unavailable": 1}}],
                      faults=[{"type": "aws_error", "action": "UpdateAutoScalingGroup", "code": "ValidationError",
                               "count": 1}])


@pytest.fixture(scope="module")
def race_sandbox(tmp_path_factory):
    with running_sandbox(RACE, tmp_path_factory.mktemp("sandbox-race")) as handle:
        yield handle


def test_issue10_item24_an_aws_validation_error_in_a_race_is_neither_invalid_parameter_nor_nothing_changed(
        race_sandbox, tmp_path):
    sandbox = race_sandbox
    # The target version exists already (a person made it, or an earlier run): the run creates nothing, so its
    # first changes are the journal and the suspended processes, then the refused UpdateAutoScalingGroup.
    template = workers_asg(sandbox)["LaunchTemplate"]
    sandbox.client("ec2").create_launch_template_version(
        LaunchTemplateId=template["LaunchTemplateId"], SourceVersion="1",
        LaunchTemplateData={"ImageId": image_id_by_name(sandbox, AMI_130)})
    report_path = tmp_path / "report.json"
    result = run_playbook(sandbox, REPO_ROOT / "playbooks" / "upgrade_nodegroup.yml", {
        "cluster_name": "race", "nodegroup_name": "workers", "kubernetes_version": "1.30",
        "upgrade_report_path": str(report_path)})
    assert result.returncode != 0, result.stdout[-3000:]
    error = json.loads(report_path.read_text())["error"]
    assert (error["phase"], error["code"], error["aws_error_code"]) == ("setup", "ApiError", "ValidationError"), error
    assert "ValidationError" in error["msg"] and "before that, this run wrote the upgrade journal" in error["msg"]
    assert not error["resume"].startswith("Nothing was changed") and "correct the parameter" not in error["resume"]
    assert "resumes from the journal" in error["resume"], error["resume"]
    assert "InvalidParameter" not in error["summary"]
    # what the advice says is so: the journal is on the group and the processes are suspended
    asg = workers_asg(sandbox)
    assert asg["AutoScalingGroupName"] == asg_name_of(sandbox)
    assert any(tag["Key"].startswith("eksops.nodegroup/") for tag in asg["Tags"])
    assert {p["ProcessName"] for p in asg["SuspendedProcesses"]} >= {"AZRebalance", "ReplaceUnhealthy"}
    assert error["group_state"]["journal_phase"] == "setup"
