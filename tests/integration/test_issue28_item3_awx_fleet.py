# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 28 item 3: the fleet as AWX runs it (docs/awx.md, *A fleet*), through ansible-runner, on the sandbox's
multi-cluster ``fleet`` scenario. The inventory source (type scm: a project's eks_nodegroups file) is synced as AWX
syncs it, ``ansible-inventory --list --export`` with the AWS credential's environment; each job gets AWX's inventory
script of the imported hosts (awx_jobs.py). The workflow's preflight node, the fleet playbook with job type Check
over the whole fleet, plans every wave and changes nothing, its report in the job's artifacts; slices of a sliced job
template are refused or run as docs/awx.md, *Job slicing*, says; a workflow node's job is not misled by the extra
variables AWX makes of the previous node's set_stats data."""

from __future__ import annotations

import json
import os
import shutil

import ansible_runner

from awx_jobs import inventory_update, stats_artifact, write_job_inventory
from sandbox_helpers import COLLECTIONS_PATH, REPO_ROOT

SCENARIO = "fleet"
SOURCE = """plugin: eksops.nodegroup.eks_nodegroups
regions: [us-west-2, eu-west-1]
keyed_groups:
  - key: nodegroup_tags['upgrade-ring'] | default('none')
    prefix: ring
"""
# The job template's variables (the workflow's survey); the sandbox's nodes boot in about 2 s.
EXTRA_VARS = {"kubernetes_version": "1.30", "accept_owner_revert": True, "node_ready_timeout": 20,
              "drain_timeout": 60, "post_drain_wait": 1}
# What a run may not have done to a node group that it only planned: a change of AWS or of Kubernetes.
READS = ("Describe", "List", "Get")


def credentials(sandbox, path):
    """The environment AWX's credentials inject: Amazon Web Services, and a kubeconfig credential type whose
    injector writes the file into the private data directory and sets KUBECONFIG (docs/awx.md, *A fleet*)."""
    kubeconfig = path / "tmpkubeconfig"
    shutil.copy(sandbox.env["KUBECONFIG"], kubeconfig)
    return dict(AWS_ACCESS_KEY_ID=sandbox.env["AWS_ACCESS_KEY_ID"], AWS_SECRET_ACCESS_KEY=sandbox.env["AWS_SECRET_ACCESS_KEY"],
                KUBECONFIG=str(kubeconfig),
                # Not AWX's: the sandbox's endpoint for every AWS service, and where the EE has the collection.
                AWS_ENDPOINT_URL=sandbox.env["AWS_ENDPOINT_URL"], ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS_PATH),
                HOME=str(path), ANSIBLE_LOCAL_TEMP=str(path / "tmp"), ANSIBLE_REMOTE_TEMP=str(path / "tmp"))


def synced_inventory(sandbox, path):
    (path / "project" / "inventory").mkdir(parents=True)
    (path / "project" / "inventory" / "fleet.eks_nodegroups.yml").write_text(SOURCE)
    return inventory_update(path, "inventory/fleet.eks_nodegroups.yml", credentials(sandbox, path))


def launch(sandbox, path, imported, cmdline, extra_vars, slice_number=1, slice_count=1):
    """A job of the fleet job template: its private data directory written as AWX writes it, the job run."""
    path.mkdir()
    (path / "env").mkdir()
    os.symlink(REPO_ROOT, path / "project")
    write_job_inventory(path, imported, slice_number, slice_count)
    (path / "env" / "envvars").write_text(json.dumps(credentials(sandbox, path)))
    (path / "env" / "extravars").write_text(json.dumps(dict(EXTRA_VARS, **extra_vars)))
    return ansible_runner.run(private_data_dir=str(path), playbook="playbooks/upgrade_fleet.yml", ident="1",
                              cmdline=cmdline, suppress_env_files=True, quiet=True, timeout=600)


def changes(report):
    """Every AWS request but a read, and every Kubernetes request but a read, made so far (running totals)."""
    aws = {key: count for key, count in report["aws_calls"].items() if not key.startswith(READS)}
    kubernetes = {"%s %s" % (name, key): count for name, cluster in report["clusters"].items()
                  for key, count in cluster["k8s_requests"].items() if key.split()[-3] not in ("get", "list", "watch")}
    return aws, kubernetes


def test_issue28_item3_the_preflight_plans_the_whole_fleet_and_changes_nothing(sandbox, tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith(("AWS_", "K8S_AUTH_")) or name in ("KUBECONFIG", "ANSIBLE_COLLECTIONS_PATH"):
            monkeypatch.delenv(name)
    imported = synced_inventory(sandbox, tmp_path / "sync")
    assert sorted(imported["ring_ring1"]["hosts"]) == ["fleet-eu/system", "fleet-west/apps", "fleet-west/system"]
    before = changes(sandbox.report())

    job = launch(sandbox, tmp_path / "preflight", imported, "--check", {})
    stdout = (tmp_path / "preflight" / "artifacts" / "1" / "stdout").read_text()
    assert (job.status, job.rc) == ("successful", 0), stdout[-6000:]
    assert "6 wave(s) of 8 node group(s)" in stdout and "wave 3 (ring1, after the bake of ring canary): fleet-eu/system, fleet-west/system" in stdout
    fleet = stats_artifact(tmp_path / "preflight", "1")["eksops_fleet"]
    assert fleet["status"] == "planned" and fleet["counts"] == {"planned": 8}
    assert changes(sandbox.report()) == before

    # Slice 1 of 3 of a sliced job template holds fleet-canary/apps-arm, fleet-eu/legacy and fleet-west/batch: each
    # cluster's other node groups run in the other slices at the same time. Refused before any request.
    job = launch(sandbox, tmp_path / "slice1", imported, "--check", {}, 1, 3)
    stdout = (tmp_path / "slice1" / "artifacts" / "1" / "stdout").read_text()
    assert (job.status, job.rc) == ("failed", 2), stdout[-6000:]
    assert "per_cluster_concurrency" in stdout and "job_slice_count 1" in stdout and "Nothing was changed" in stdout

    # Slice 2 of 3 limited to ring1, its node groups declared independent, as a workflow node after the preflight:
    # the preflight's set_stats data are its extra variables (awx/main/models/workflow.py, ancestor_artifacts). It
    # upgrades its own two node groups, and reports its own pictures, not the preflight's (null) one.
    reports = tmp_path / "slice2" / "reports"
    job = launch(sandbox, tmp_path / "slice2", imported, "--limit ring_ring1",
                 dict(stats_artifact(tmp_path / "preflight", "1"), per_cluster_concurrency=3,
                      fleet_report_path=str(reports / "fleet.json")), 2, 3)
    stdout = (tmp_path / "slice2" / "artifacts" / "1" / "stdout").read_text()
    assert (job.status, job.rc) == ("successful", 0), stdout[-6000:]
    artifacts = stats_artifact(tmp_path / "slice2", "1")
    assert [(row["host"], row["wave"], row["status"]) for row in artifacts["eksops_fleet"]["rows"]] == [
        ("fleet-eu/system", 1, "succeeded"), ("fleet-west/system", 1, "succeeded"),
        ("fleet-canary/system", None, "left_out")]  # in the slice, outside the limit
    assert artifacts["eksops_fleet"]["status"] == "partial"
    assert all(row["timeline_path"].startswith(str(reports)) for row in artifacts["eksops_fleet"]["rows"][:2])
    assert artifacts["nodegroup_upgrade_timeline_path"].startswith(str(reports / "nodegroups"))
    final = sandbox.report()["clusters"]
    for cluster, nodegroup in (("fleet-canary", "system"), ("fleet-west", "apps"), ("fleet-eu", "apps")):
        assert final[cluster]["nodegroups"][nodegroup]["instance_count_max"] == 2, (cluster, nodegroup)
    assert all(cluster["pods_lost"] == [] for cluster in final.values())
