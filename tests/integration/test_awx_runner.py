# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 25 item 5: the job as AWX runs it (docs/awx.md), through ansible-runner, on the sandbox.

AWX hands ansible-runner a private data directory: project/ (the checked-out project), inventory/, env/extravars (the
job template's variables and the survey's answers), and the credentials' injected environment (env/envvars, here:
AWX's Amazon Web Services credential, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, and its OpenShift or Kubernetes API
Bearer Token credential, K8S_AUTH_HOST/K8S_AUTH_API_KEY/K8S_AUTH_VERIFY_SSL and the CA written to a file in the
private data directory, K8S_AUTH_SSL_CA_CERT: awx/main/models/credential/injectors.py aws and
kubernetes_bearer_token). AWX runs it with suppress_env_files (AWX_RUNNER_OMIT_ENV_FILES). The job's summary is the
set_stats data, in the playbook_on_stats event's artifact_data; every job event is stored and shown, so no secret may
be in any of them. A relaunch runs the same private data again: the journal makes it resume, and on a finished
upgrade change nothing (SPEC K5).
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import sys

import ansible_runner
import yaml

from awx_jobs import stats_artifact
from sandbox_helpers import COLLECTIONS_PATH, REPO_ROOT

SCENARIO = "surge5"
SURVEY = REPO_ROOT / "extensions" / "awx" / "upgrade_nodegroup.survey.json"
# The survey's answers; every other question keeps its default, as the AWX launch form does.
ANSWERS = {"cluster_name": "surge5", "nodegroup_name": "workers", "kubernetes_version": "1.30",
           "max_unavailable": 2, "drain_timeout": 60, "post_drain_wait": 0}


def survey_extra_vars():
    """extra_vars of a launch with ANSWERS: the answered questions, and the defaults of the others that have one
    (an optional question left blank is not passed)."""
    spec = json.loads(SURVEY.read_text())["spec"]
    extra_vars = {question["variable"]: question["default"] for question in spec if question["default"] != ""}
    extra_vars.update(ANSWERS)
    return extra_vars


def kubernetes_bearer_credential(sandbox, private_data_dir):
    """What AWX's Kubernetes bearer token credential injects for the sandbox's API server, and its token."""
    kubeconfig = yaml.safe_load(open(sandbox.env["KUBECONFIG"], encoding="utf-8"))
    cluster = kubeconfig["clusters"][0]["cluster"]
    token = kubeconfig["users"][0]["user"]["token"]
    injected = {"K8S_AUTH_HOST": cluster["server"], "K8S_AUTH_API_KEY": token}
    if cluster.get("certificate-authority-data"):
        ca_file = private_data_dir / "tmpk8sca"
        ca_file.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
        os.chmod(ca_file, 0o600)
        injected.update(K8S_AUTH_VERIFY_SSL="True", K8S_AUTH_SSL_CA_CERT=str(ca_file))
    else:
        injected["K8S_AUTH_VERIFY_SSL"] = "False"
    return injected, token


def private_data_dir(sandbox, path, aws_secret):
    """The private data directory AWX writes for the job; returns it and the secrets it holds."""
    path.mkdir()
    (path / "env").mkdir()
    (path / "inventory").mkdir()
    os.symlink(REPO_ROOT, path / "project")
    (path / "inventory" / "hosts").write_text("localhost ansible_connection=local ansible_python_interpreter=%s\n"
                                              % sys.executable)
    kubernetes, token = kubernetes_bearer_credential(sandbox, path)
    envvars = dict(kubernetes, AWS_ACCESS_KEY_ID=sandbox.env["AWS_ACCESS_KEY_ID"], AWS_SECRET_ACCESS_KEY=aws_secret,
                   AWS_REGION=sandbox.env["AWS_REGION"],
                   # Not AWX's: the sandbox's one endpoint for every AWS service, and where the EE has the collection.
                   AWS_ENDPOINT_URL=sandbox.env["AWS_ENDPOINT_URL"], ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS_PATH),
                   # No kubeconfig of the machine: the Kubernetes credential is the only one.
                   HOME=str(path), ANSIBLE_LOCAL_TEMP=str(path / "tmp"), ANSIBLE_REMOTE_TEMP=str(path / "tmp"))
    (path / "env" / "envvars").write_text(json.dumps(envvars))
    return path, [aws_secret, token]


def run_job(path, ident):
    return ansible_runner.run(private_data_dir=str(path), playbook="playbooks/upgrade_nodegroup.yml", ident=ident,
                              suppress_env_files=True, quiet=True, timeout=900)


def assert_no_secret(path, ident, secret_values):
    """No secret in any job event, in stdout, or in any other file of the job's artifacts but ``command``:
    ansible-runner's record of the process it started, with its environment (ansible_runner/runner.py), which AWX
    never stores (it keeps the events, stdout and the set_stats artifacts) and deletes with the private data
    directory."""
    artifacts = path / "artifacts" / ident
    files = [os.path.join(root, name) for root, _dirs, names in os.walk(artifacts) for name in names
             if os.path.join(root, name) != str(artifacts / "command")]
    assert any(name.endswith("stdout") for name in files) and any("job_events" in name for name in files)
    for name in files:
        with open(name, "rb") as handle:
            content = handle.read()
        for secret in secret_values:
            assert secret.encode() not in content, "a secret is in %s" % name


def launch(path, ident, **answers):
    """A launch of the job template with the survey's answers: its extra_vars written, the job run."""
    (path / "env" / "extravars").write_text(json.dumps(dict(survey_extra_vars(), **answers)))
    return run_job(path, ident)


def test_issue25_item5_a_job_run_as_awx_runs_it_reports_and_keeps_its_secrets(sandbox, tmp_path, monkeypatch):
    # ansible-runner passes its own process's environment on: only the credentials' may reach the job.
    for name in list(os.environ):
        if name.startswith(("AWS_", "K8S_AUTH_")) or name in ("KUBECONFIG", "ANSIBLE_COLLECTIONS_PATH"):
            monkeypatch.delenv(name)
    path, secret_values = private_data_dir(sandbox, tmp_path / "job", "awx-" + secrets.token_hex(20))

    # The survey's defaults refuse to pin a version on the eksctl group (SPEC W1): a failed job, its report too.
    failed = launch(path, "1")
    assert (failed.status, failed.rc) == ("failed", 2)
    report = stats_artifact(path, "1")["nodegroup_upgrade"]
    assert report["status"] == "failed" and report["error"]["code"] == "OwnedByInfrastructureAsCode"
    assert_no_secret(path, "1", secret_values)

    # The survey answered so (a multiple choice "true", as AWX passes it): the upgrade.
    run = launch(path, "2", accept_owner_revert="true")
    assert (run.status, run.rc) == ("successful", 0), (path / "artifacts" / "2" / "stdout").read_text()[-6000:]
    report = stats_artifact(path, "2")["nodegroup_upgrade"]
    assert report["status"] == "succeeded" and report["on_target_already"] is False
    assert len(report["replaced_instances"]) == 5
    assert_no_secret(path, "2", secret_values)

    # Relaunch: the same job again, as AWX's relaunch runs it (docs/awx.md); the group is on the target.
    rerun = run_job(path, "3")
    assert (rerun.status, rerun.rc) == ("successful", 0), (path / "artifacts" / "3" / "stdout").read_text()[-6000:]
    again = stats_artifact(path, "3")["nodegroup_upgrade"]
    assert again["on_target_already"] is True and again["replaced_instances"] == []
    assert_no_secret(path, "3", secret_values)
    assert sandbox.report()["pods_lost"] == [] and sandbox.report()["pdb_violations"] == []
