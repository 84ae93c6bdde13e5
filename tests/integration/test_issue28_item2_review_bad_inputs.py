# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 2 review, findings 1 and 5: playbooks/upgrade_fleet.yml refuses before any change a node group the
inventory found in another account than the credentials it will use reach (one STS GetCallerIdentity per set of
credentials; a moto server answers it as account 123456789012, and nothing else), a cluster whose control plane
is older than kubernetes_version (SPEC K6, from the inventory's cluster_version) and a relative fleet_report_path,
naming the parameter. No sandbox: the static inventory of test_issue28_item2_fleet_bad_inputs."""

from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
import sys
import time

import pytest

from sandbox_helpers import BIN_DIR, COLLECTIONS_PATH, REPO_ROOT
from test_issue28_item2_fleet_bad_inputs import INVENTORY

# moto's account (moto.core DEFAULT_ACCOUNT_ID), which its GetCallerIdentity answers.
MOTO_ACCOUNT = "123456789012"


@pytest.fixture(scope="module")
def aws_endpoint():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([str(BIN_DIR / "moto_server"), "-p", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    yield "http://127.0.0.1:%d" % port
    server.terminate()
    server.wait(timeout=10)


def run_fleet(tmp_path, endpoint, hosts, extra):
    inventory = copy.deepcopy(INVENTORY)
    for name, variables in hosts.items():
        inventory["all"]["hosts"][name].update(variables)
    path = tmp_path / "fleet.yml"
    path.write_text(json.dumps(inventory))
    env = {key: value for key, value in os.environ.items() if not key.startswith(("AWS_", "K8S_AUTH_")) and key != "KUBECONFIG"}
    env.update(PATH=f"{BIN_DIR}{os.pathsep}{env.get('PATH', '')}", ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS_PATH),
               ANSIBLE_NOCOLOR="1", ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCAL_TEMP=str(tmp_path),
               AWS_ENDPOINT_URL=endpoint, AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
               AWS_MAX_ATTEMPTS="1")
    result = subprocess.run([str(BIN_DIR / "ansible-playbook"), "-i", str(path),
                             str(REPO_ROOT / "playbooks" / "upgrade_fleet.yml"),
                             "-e", json.dumps(dict({"kubernetes_version": "1.30"}, **extra))],
                            capture_output=True, text=True, env=env, timeout=120, check=False, cwd=REPO_ROOT)
    assert result.returncode != 0, result.stdout[-3000:]
    starts = [index for index in (result.stdout.find("fatal: ["), result.stdout.find("failed: [")) if index >= 0]
    return result.stdout[min(starts):] if starts else result.stdout


CASES = [
    # Finding 1: c1/apps is in account 210987654321, the controller's credentials reach 123456789012.
    ({"c1/system": {"aws_account_id": MOTO_ACCOUNT}, "c1/apps": {"aws_account_id": "210987654321"}}, {},
     "aws_profile", "c1/apps (account 210987654321) are not in account %s" % MOTO_ACCOUNT, "Resolve every node group"),
    # Finding 5a: c1's control plane is 1.29.
    ({"c1/system": {"cluster_version": "1.29"}, "c1/apps": {"cluster_version": "1.29"}}, {}, "kubernetes_version",
     "c1/system (1.29), c1/apps (1.29)", "Refuse the node groups of another account"),
    # Finding 5b: a relative path would put the node groups' reports under /nodegroups.
    ({}, {"fleet_report_path": "fleet.json"}, "fleet_report_path", "absolute file path, got fleet.json",
     "Plan the waves"),
]


@pytest.mark.parametrize("hosts, extra, parameter, says, not_reached", CASES, ids=["account", "control-plane", "report-path"])
def test_issue28_item2_review_a_fleet_input_found_wrong_is_refused_before_any_change(
        aws_endpoint, tmp_path, hosts, extra, parameter, says, not_reached):
    failed = run_fleet(tmp_path, aws_endpoint, hosts, extra)
    assert '"parameter": "%s"' % parameter in failed and says in failed, failed[-3000:]
    assert not_reached not in failed
