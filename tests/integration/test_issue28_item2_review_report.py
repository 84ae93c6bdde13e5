# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 2 review, findings 2, 4 and 6, through playbooks/upgrade_fleet.yml itself: a canary whose run fails
halts the fleet with a FleetWaveFailed message that says the later waves do not start and why (1 of 1, more than
fleet_max_fail_percentage 0%), the report written says halted with its halt, and a node group of the inventory left
out with --limit is a row left_out; an inventory's ansible_connection (ssh to a host that does not exist) does not
take the work off the controller. No sandbox: a moto server in a thread holds only the SSM parameters the fleet
reads, so the canary's run fails at its first read of its cluster."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

from sandbox_helpers import BIN_DIR, COLLECTIONS_PATH, REPO_ROOT
from test_issue28_item2_fleet_bad_inputs import INVENTORY

SSM = {"/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/release_version": "1.30.0-20240701",
       "/aws/service/eks/optimized-ami/1.30/amazon-linux-2023/x86_64/standard/recommended/image_id": "ami-0x86"}
# A moto server in this helper process, with the public parameters (moto's PutParameter refuses /aws/ names).
SERVER = """
import sys, time
sys.path[:0] = [sys.argv[1]]
from moto.moto_server.threaded_moto_server import ThreadedMotoServer
from plugins.moto_nodegroup import publish_ssm_parameter
server = ThreadedMotoServer(port=0)
server.start()
for name, value in %r.items():
    publish_ssm_parameter(name, value, region="us-west-2")
print("port", server._server.server_port, flush=True)
time.sleep(600)
""" % (SSM,)


def test_issue28_item2_review_a_failed_canary_halts_says_why_and_reports_the_node_groups_left_out(tmp_path):
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(REPO_ROOT / "tests" / "unit")], stdout=subprocess.PIPE,
                              text=True, env=dict(os.environ, PYTHONPATH=str(COLLECTIONS_PATH)))
    try:
        port = int(next(line for line in server.stdout if line.startswith("port ")).split()[1])
        inventory = copy.deepcopy(INVENTORY)
        inventory["all"]["hosts"]["c1/system"].update(ansible_connection="ssh", ansible_host="192.0.2.1")
        inventory["all"]["hosts"]["c2/left"] = dict(inventory["all"]["hosts"]["c1/apps"], cluster_name="c2",
                                                    nodegroup_name="left")
        (tmp_path / "fleet.yml").write_text(json.dumps(inventory))
        env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "K8S_AUTH_")) and key != "KUBECONFIG"}
        env.update(PATH=f"{BIN_DIR}{os.pathsep}{env.get('PATH', '')}", ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS_PATH),
                   ANSIBLE_NOCOLOR="1", ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCAL_TEMP=str(tmp_path),
                   AWS_ENDPOINT_URL="http://127.0.0.1:%d" % port, AWS_ACCESS_KEY_ID="testing",
                   AWS_SECRET_ACCESS_KEY="testing", AWS_MAX_ATTEMPTS="1")
        report_path = tmp_path / "out" / "fleet.json"
        result = subprocess.run([str(BIN_DIR / "ansible-playbook"), "-i", str(tmp_path / "fleet.yml"), "--limit", "all:!c2/left",
                                 str(REPO_ROOT / "playbooks" / "upgrade_fleet.yml"),
                                 "-e", json.dumps(dict(kubernetes_version="1.30", fleet_report_path=str(report_path)))],
                                capture_output=True, text=True, env=env, timeout=300, check=False, cwd=REPO_ROOT)
    finally:
        server.kill()
        server.wait()
    assert result.returncode != 0 and "UNREACHABLE" not in result.stdout, result.stdout[-4000:]
    assert ("ended failed" in result.stdout and "1 of the 1 node group(s) of wave 1 did not end on target, more than "
            "fleet_max_fail_percentage 0%: the later waves do not start" in result.stdout), result.stdout[-4000:]
    report = json.loads(report_path.read_text())
    assert report["status"] == "halted" and report["halt"]["code"] == "FleetWaveFailed", report
    assert (report["halt"]["wave"], report["halted_at"]["failed"]) == (1, ["c1/system"])
    assert [(row["host"], row["status"]) for row in report["rows"]] == [
        ("c1/system", "failed"), ("c1/apps", "not_started"), ("c2/left", "left_out")]
