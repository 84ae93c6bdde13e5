# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers for integration tests: a running sandbox (started through the `eks-sandbox` CLI) and ways to run
the collection's modules and playbooks against it through the .venv's Ansible.

The `sandbox` fixture in conftest.py yields a `SandboxHandle` (a module with a sandbox of another scenario as well
makes its fixture with `module_sandbox`); tests call `run_module(sandbox, ...)` and `run_playbook(sandbox, ...)` from
here.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

REPO_ROOT = Path(__file__).resolve().parents[2]
COLLECTIONS_PATH = REPO_ROOT / "build" / "collections"
CALLBACK_PLUGINS = Path(__file__).resolve().parent / "callback_plugins"
BIN_DIR = Path(sys.executable).parent
COLLECTION_PREFIX = "eksops.nodegroup."
UP_TIMEOUT = 180
MODULE_TIMEOUT = 600

__all__ = ["SandboxHandle", "start_sandbox", "stop_sandbox", "running_sandbox", "module_sandbox", "run_module",
           "run_playbook", "ansible_env"]


def _cli(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "eks_sandbox.cli", *args], capture_output=True, text=True,
                          timeout=timeout, check=False)


def _read_env_file(path: Path) -> dict[str, str]:
    from eks_sandbox.runtime import read_env_file

    return read_env_file(path)


class SandboxHandle:
    """A sandbox started by `eks-sandbox up`; clients for both of its sides."""

    def __init__(self, scenario: str, state_dir: Path):
        self.scenario = scenario
        self.state_dir = state_dir
        self.env: dict[str, str] = {**_read_env_file(state_dir / "env"),
                                    "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS_PATH)}
        self._kube_client = None

    def report(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.env["SANDBOX_URL"] + "/report", timeout=30) as response:
            return json.loads(response.read())

    def apply(self, nodegroup: str = "workers", ami: str | None = None, instance_refresh: bool | None = None
              ) -> list[str]:
        """The node group's infrastructure as code applies (`eks-sandbox apply`: terraform-aws-eks, a CloudFormation
        stack); returns what it did, in words."""
        body = json.dumps({"nodegroup": nodegroup, "ami": ami, "instance_refresh": instance_refresh}).encode()
        request = urllib.request.Request(self.env["SANDBOX_URL"] + "/apply", data=body, method="POST",
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())["done"]

    def client(self, service: str):
        """A boto3 client for the sandbox's moto endpoint."""
        import boto3

        return boto3.client(service, endpoint_url=self.env["AWS_ENDPOINT_URL"], region_name=self.env["AWS_REGION"],
                            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"])

    def _api_client(self):
        if self._kube_client is None:
            from kubernetes import config

            self._kube_client = config.new_client_from_config(config_file=self.env["KUBECONFIG"])
        return self._kube_client

    def core_v1(self):
        from kubernetes import client

        return client.CoreV1Api(self._api_client())

    def policy_v1(self):
        from kubernetes import client

        return client.PolicyV1Api(self._api_client())

    def apps_v1(self):
        from kubernetes import client

        return client.AppsV1Api(self._api_client())

    def close(self) -> None:
        if self._kube_client is not None:
            self._kube_client.close()
            self._kube_client = None


def start_sandbox(scenario: str, state_dir: Path) -> SandboxHandle:
    """`eks-sandbox up`; raises RuntimeError with the CLI's output (it includes the log tail) on failure."""
    result = _cli("up", "--scenario", scenario, "--state-dir", str(state_dir), timeout=UP_TIMEOUT + 30)
    if result.returncode != 0:
        raise RuntimeError(f"eks-sandbox up --scenario {scenario} failed ({result.returncode}):\n"
                           f"{result.stdout}{result.stderr}")
    return SandboxHandle(scenario, state_dir)


def stop_sandbox(state_dir: Path) -> None:
    result = _cli("down", "--state-dir", str(state_dir), timeout=60)
    if result.returncode != 0:
        raise RuntimeError(f"eks-sandbox down failed ({result.returncode}):\n{result.stdout}{result.stderr}")


@contextlib.contextmanager
def running_sandbox(scenario: str | dict[str, Any], state_dir: Path) -> Iterator[SandboxHandle]:
    """A sandbox for the block, stopped afterwards (also when `up` failed half-way: down is a no-op when nothing
    runs). ``scenario``: a shipped scenario's name, a file, or a mapping (written to a file in ``state_dir``).
    A failed start fails the test that asked for it, with the CLI's output."""
    import pytest
    import yaml

    if isinstance(scenario, dict):
        path = state_dir / "scenario.yaml"
        path.write_text(yaml.safe_dump(scenario))
        scenario = str(path)
    handle = None
    try:
        try:
            handle = start_sandbox(scenario, state_dir)
        except RuntimeError as exc:
            pytest.fail(str(exc), pytrace=False)
        yield handle
    finally:
        if handle is not None:
            handle.close()
        stop_sandbox(state_dir)


def module_sandbox(scenario: str | dict[str, Any]):
    """A module-scoped fixture yielding a sandbox of the shipped scenario ``scenario`` (or of a scenario mapping,
    named by its ``name``), for a module that needs one besides its `sandbox` (conftest.py):
    ``other_sandbox = module_sandbox("fault_autoscaler")`` at module level makes the fixture ``other_sandbox``."""
    import pytest

    name = scenario["name"] if isinstance(scenario, dict) else scenario

    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory) -> Iterator[SandboxHandle]:
        with running_sandbox(scenario, tmp_path_factory.mktemp(f"sandbox-{name}")) as handle:
            yield handle

    return fixture


def ansible_env(sandbox: SandboxHandle, **extra: str | None) -> dict[str, str]:
    """The environment Ansible runs in: ours, the sandbox's endpoints and credentials, quiet defaults, then
    ``extra`` (a None value removes the variable)."""
    env = dict(os.environ)
    # A developer's own AWS/Kubernetes settings must not leak into a test run.
    for key in list(env):
        if key.startswith(("AWS_", "K8S_AUTH_")) or key == "KUBECONFIG":
            del env[key]
    env.update(sandbox.env)
    env.update({"PATH": f"{BIN_DIR}{os.pathsep}{env.get('PATH', '')}",
                "ANSIBLE_LOCALHOST_WARNING": "False",
                "ANSIBLE_INVENTORY_UNPARSED_WARNING": "False",
                "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_RETRY_FILES_ENABLED": "False",
                "ANSIBLE_LOCAL_TEMP": str(sandbox.state_dir / "ansible-tmp"),
                "ANSIBLE_REMOTE_TEMP": str(sandbox.state_dir / "ansible-tmp")})
    env.update(extra)
    return {key: value for key, value in env.items() if value is not None}


# SPEC W1: the sandbox's terraform-aws-eks and CloudFormation node groups are owned by infrastructure as code, and
# the collection refuses to pin a launch template version behind its owner's back. The tests that upgrade them with
# image_id, kubernetes_version or launch_template_version never apply the owner's code afterwards, so run_playbook
# and run_module accept the revert for them; the tests of the refusal and of the owner's workflow
# (test_infrastructure_as_code.py) set accept_owner_revert themselves, which wins.
OWNER_REVERT_ACCEPTED = {"accept_owner_revert": True}
_OWNER_REVERT_MODULES = ("launch_template_version", "nodegroup_setup")


def run_module(sandbox: SandboxHandle, module: str, args: dict[str, Any], check: bool = False,
               diff: bool = False, timeout: float = MODULE_TIMEOUT, env: dict[str, str | None] | None = None
               ) -> dict[str, Any]:
    """Run one module on localhost (`ansible localhost -m ...`) and return its result.

    A bare name means a module of this collection (`node_drain` -> `eksops.nodegroup.node_drain`). A failed
    module (or an Ansible error before it ran) is returned with `failed: True` and `msg`, never raised.
    The result is written by callback_plugins/sandbox_result.py to a file, complete (diff, warnings,
    exception), so nothing a module or Ansible prints can corrupt it. ``env`` overrides variables of the
    environment Ansible runs in (e.g. another KUBECONFIG).
    """
    name = module if "." in module else COLLECTION_PREFIX + module
    if module in _OWNER_REVERT_MODULES:
        args = {**OWNER_REVERT_ACCEPTED, **args}
    command = [str(BIN_DIR / "ansible"), "localhost", "-m", name, "-a", json.dumps(args)]
    if check:
        command.append("--check")
    if diff:
        command.append("--diff")
    with tempfile.TemporaryDirectory(prefix="ansible-result-", dir=sandbox.state_dir) as scratch:
        result_file = Path(scratch) / "result.json"
        run_env = ansible_env(sandbox, ANSIBLE_STDOUT_CALLBACK="sandbox_result", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
                              ANSIBLE_CALLBACK_PLUGINS=str(CALLBACK_PLUGINS), SANDBOX_RESULT_FILE=str(result_file),
                              **(env or {}))
        result = subprocess.run(command, capture_output=True, text=True, env=run_env, timeout=timeout, check=False)
        try:
            module_result = json.loads(result_file.read_text())["localhost"]
        except (OSError, ValueError, KeyError):
            return {"failed": True, "rc": result.returncode,
                    "msg": f"ansible produced no module result (exit {result.returncode}): "
                           f"{result.stderr.strip() or result.stdout.strip()}"}
    return module_result


def run_playbook(sandbox: SandboxHandle, playbook_path: str | os.PathLike, extra_vars: dict[str, Any],
                 check: bool = False, timeout: float = MODULE_TIMEOUT, env: dict[str, str | None] | None = None
                 ) -> subprocess.CompletedProcess:
    """`ansible-playbook PLAYBOOK -e <extra_vars as JSON>` against the sandbox; output captured as text.
    ``env`` overrides variables of the environment Ansible runs in."""
    command = [str(BIN_DIR / "ansible-playbook"), str(playbook_path), "-e",
               json.dumps({**OWNER_REVERT_ACCEPTED, **extra_vars})]
    if check:
        command.append("--check")
    return subprocess.run(command, capture_output=True, text=True, env=ansible_env(sandbox, **(env or {})),
                          timeout=timeout, check=False, cwd=REPO_ROOT)


def start_playbook(sandbox: SandboxHandle, playbook_path: str | os.PathLike, extra_vars: dict[str, Any],
                   **popen: Any) -> subprocess.Popen:
    """run_playbook's command started, not waited for (output piped to one text stream), for a test that changes the
    sandbox while the run goes on; ``popen``: more subprocess.Popen arguments."""
    return subprocess.Popen(  # pylint: disable=consider-using-with
        [str(BIN_DIR / "ansible-playbook"), str(playbook_path), "-e", json.dumps({**OWNER_REVERT_ACCEPTED, **extra_vars})],
        env=ansible_env(sandbox), cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


@contextlib.contextmanager
def running_playbook(sandbox: SandboxHandle, playbook_path: str | os.PathLike, extra_vars: dict[str, Any]
                     ) -> Iterator[subprocess.Popen]:
    """start_playbook for the block, killed at its end if still running."""
    process = start_playbook(sandbox, playbook_path, extra_vars)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> None:
    """Until ``predicate()`` holds, checked every 0.3 s; AssertionError naming ``what`` after ``timeout`` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.3)
    raise AssertionError("timed out waiting for " + what)


def kill_playbook(process: subprocess.Popen, sandbox: SandboxHandle) -> None:
    """SIGKILL an ansible-playbook started with start_new_session=True and every process it started, as when an
    AWX job's container is killed. Its process group is not enough: Ansible's workers call setsid() (ansible-core
    executor/process/worker.py), so a module they run lives on in a session of its own, still changing the group
    (and renewing the run's lease). Those are found by the sandbox's Ansible temp directory in their command line
    (ansible_env: ANSIBLE_REMOTE_TEMP) and by the playbook's own command line (the workers are its forks)."""
    marker = str(sandbox.state_dir / "ansible-tmp").encode()
    command = b"\0".join(part.encode() for part in process.args)
    os.killpg(process.pid, signal.SIGKILL)
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        # The playbook's forks run "<python> <ansible-playbook> <args>": the command, after the interpreter.
        if marker in cmdline or cmdline.rstrip(b"\0").endswith(command):
            with contextlib.suppress(OSError):
                os.kill(int(entry), signal.SIGKILL)
