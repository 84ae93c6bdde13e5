# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What AWX does around ansible-runner, for the tests that run jobs as AWX runs them (docs/awx.md), modelled on AWX's
source (github.com/ansible/awx, awx/main/tasks/jobs.py and awx/main/models/inventory.py):

- an inventory update of a source "Sourced from a Project" runs ``ansible-inventory --list --export -i
  project/<source_path> --output artifacts/<id>/output.json`` through ansible-runner (RunInventoryUpdate.build_args,
  written to the private data directory's ``args``), the credentials' environment injected, and imports the output;
- a job's inventory is ``inventory/hosts``, a script printing Inventory.get_script_data's JSON
  (BaseTask.write_inventory_file): the enabled hosts sorted by name, for a slice of a sliced job template every
  job_slice_count-th of them from the slice's number on (get_sliced_hosts), each group holding only those hosts;
- the job's summary is the set_stats data, in the playbook_on_stats event's artifact_data.
"""

from __future__ import annotations

import json
import os

import ansible_runner

from sandbox_helpers import BIN_DIR


def job_events(path, ident):
    events_dir = path / "artifacts" / ident / "job_events"
    return [json.loads((events_dir / name).read_text()) for name in sorted(os.listdir(events_dir))]


def stats_artifact(path, ident):
    stats = [event for event in job_events(path, ident) if event["event"] == "playbook_on_stats"]
    assert len(stats) == 1
    return stats[0]["event_data"]["artifact_data"]


def inventory_update(path, source_path, envvars, ident="1"):
    """The inventory update of a source of type scm whose project is ``path / "project"``; returns its output."""
    output = path / "artifacts" / ident / "output.json"
    (path / "env").mkdir(exist_ok=True)
    (path / "env" / "envvars").write_text(json.dumps(envvars))
    (path / "args").write_text(" ".join([str(BIN_DIR / "ansible-inventory"), "--list", "--export", "-i",
                                         str(path / "project" / source_path), "--output", str(output),
                                         "--playbook-dir", str((path / "project" / source_path).parent)]))
    run = ansible_runner.run(private_data_dir=str(path), ident=ident, suppress_env_files=True, quiet=True, timeout=300)
    assert (run.status, run.rc) == ("successful", 0), run.stdout.read()[-3000:]
    return json.loads(output.read_text())


def script_data(imported, slice_number=1, slice_count=1):
    """Inventory.get_script_data(hostvars=True, towervars=True, slice_number, slice_count) of the imported hosts."""
    names = sorted(imported["_meta"]["hostvars"])
    if slice_count > 1:
        names = names[slice_number - 1::slice_count]
    groups = [name for name in imported if name not in ("_meta", "all", "ungrouped")]
    data = {"all": {"children": groups}, "_meta": {"hostvars": {}}}
    grouped = set()
    for group in groups:
        info = {"hosts": [name for name in imported[group].get("hosts", []) if name in names]}
        grouped.update(info["hosts"])
        info.update((key, imported[group][key]) for key in ("children", "vars") if imported[group].get(key))
        if any(info.values()):
            data[group] = {key: value for key, value in info.items() if value}
    data["all"]["hosts"] = [name for name in names if name not in grouped]
    for number, name in enumerate(names, 1):
        data["_meta"]["hostvars"][name] = dict(imported["_meta"]["hostvars"][name], remote_tower_enabled="true",
                                               remote_tower_id=number, remote_host_enabled="true", remote_host_id=number)
    return data


def write_job_inventory(path, imported, slice_number=1, slice_count=1):
    """The job's inventory/hosts, as BaseTask.write_inventory_file writes it."""
    (path / "inventory").mkdir(exist_ok=True)
    hosts = path / "inventory" / "hosts"
    hosts.write_text("#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint(%r)\n"
                     % json.dumps(script_data(imported, slice_number, slice_count)))
    os.chmod(hosts, 0o700)
