# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""`eks-sandbox up | report | down | serve` (README "Command line").

`up` validates the scenario, starts `serve` as a detached process (its own session, output to
DIR/sandbox.log), records its pid in DIR/pid and waits for `/healthz`; if the child dies or the timeout
passes it stops the child and fails with the log's tail. `down` stops the recorded pid and nothing else.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from .runtime import ENV_FILE, KUBECONFIG_FILE, read_env_file
from .scenario.fields import ScenarioError
from .scenario.loader import load_scenario

__all__ = ["main", "resolve_scenario", "SCENARIOS_DIR"]

SCENARIOS_DIR = Path(__file__).resolve().parent.parent / "scenarios"
PID_FILE = "pid"
LOG_FILE = "sandbox.log"
DEFAULT_UP_TIMEOUT = 120.0
STOP_TIMEOUT = 15.0
LOG_TAIL_LINES = 40


class CliError(Exception):
    """A failure reported to the user as `eks-sandbox: <message>` with exit status 1."""


# ------------------------------------------------------------------------------------------------- helpers

def resolve_scenario(value: str) -> Path:
    """A scenario file path, or the bare name of a scenario shipped in SCENARIOS_DIR."""
    path = Path(value)
    if path.is_file():
        return path.resolve()
    if path.name == value and path.suffix not in (".yaml", ".yml"):
        shipped = SCENARIOS_DIR / f"{value}.yaml"
        if shipped.is_file():
            return shipped
    names = ", ".join(sorted(p.stem for p in SCENARIOS_DIR.glob("*.yaml")))
    raise CliError(f"no scenario file {value!r} and no shipped scenario of that name (shipped: {names})")


def _process_alive(pid: int) -> bool:
    """Whether the process exists and is not a zombie (an exited child nobody has reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _is_sandbox_process(pid: int) -> bool:
    """Guards `down` against a pid the kernel has since given to an unrelated process."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    runs_sandbox = b"serve" in cmdline or b"--foreground" in cmdline
    return runs_sandbox and any(b"eks_sandbox" in part or b"eks-sandbox" in part for part in cmdline)


def _read_pid(state_dir: Path) -> int | None:
    try:
        return int((state_dir / PID_FILE).read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def _write_pid(state_dir: Path, pid: int) -> None:
    tmp = state_dir / (PID_FILE + ".tmp")
    tmp.write_text(f"{pid}\n")
    os.replace(tmp, state_dir / PID_FILE)


def _log_tail(state_dir: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = (state_dir / LOG_FILE).read_text(errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def _sandbox_url(state_dir: Path) -> str | None:
    try:
        return read_env_file(state_dir / ENV_FILE).get("SANDBOX_URL")
    except FileNotFoundError:
        return None


def _get_json(url: str, timeout: float) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read())
        except ValueError:
            return exc.code, None


def _stop_process(pid: int, timeout: float = STOP_TIMEOUT) -> None:
    """SIGTERM, then SIGKILL if it is still there after `timeout`; returns once it is gone."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 5.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            _reap(pid)
            if not _process_alive(pid):
                return
            time.sleep(0.05)
    raise CliError(f"process {pid} did not stop")


def _reap(pid: int) -> None:
    """Collect the exit status when the process is our own child (else it would linger as a zombie)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


# ------------------------------------------------------------------------------------------------- commands

def cmd_up(args: argparse.Namespace) -> int:
    scenario_path = resolve_scenario(args.scenario)
    try:
        load_scenario(scenario_path)
    except ScenarioError as exc:
        raise CliError(f"{scenario_path}: {exc}") from exc
    state_dir = Path(args.state_dir).resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    running = _read_pid(state_dir)
    if running is not None and _process_alive(running) and _is_sandbox_process(running):
        raise CliError(f"a sandbox is already running in {state_dir} (pid {running}); "
                       f"run: eks-sandbox down --state-dir {state_dir}")
    for name in (PID_FILE, ENV_FILE, KUBECONFIG_FILE):
        (state_dir / name).unlink(missing_ok=True)
    if args.foreground:
        return serve(scenario_path, state_dir, foreground=True)
    return _up_background(scenario_path, state_dir, args.timeout)


def _up_background(scenario_path: Path, state_dir: Path, timeout: float) -> int:
    began = time.monotonic()
    with open(state_dir / LOG_FILE, "wb") as log_file:
        child = subprocess.Popen(
            [sys.executable, "-m", "eks_sandbox.cli", "serve", "--scenario", str(scenario_path),
             "--state-dir", str(state_dir)],
            stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
            close_fds=True, cwd=state_dir)
    _write_pid(state_dir, child.pid)
    try:
        return _wait_until_ready(child, scenario_path, state_dir, began, timeout)
    except KeyboardInterrupt:
        # Ctrl-C on `up` means "never mind": do not leave a half-started sandbox behind.
        _stop_process(child.pid)
        (state_dir / PID_FILE).unlink(missing_ok=True)
        raise


def _wait_until_ready(child: subprocess.Popen, scenario_path: Path, state_dir: Path, began: float,
                      timeout: float) -> int:
    detail = "not listening yet"
    while time.monotonic() - began < timeout:
        code = child.poll()
        if code is not None:
            (state_dir / PID_FILE).unlink(missing_ok=True)
            raise CliError(f"the sandbox exited with status {code} while starting; "
                           f"{state_dir / LOG_FILE} ends with:\n{_log_tail(state_dir)}")
        url = _sandbox_url(state_dir)
        if url:
            try:
                status, body = _get_json(url + "/healthz", timeout=2)
                if status == 200:
                    print(f"sandbox {scenario_path.stem} ready in {time.monotonic() - began:.1f} s "
                          f"(pid {child.pid}); source {state_dir / ENV_FILE}")
                    return 0
                detail = (body or {}).get("detail", f"HTTP {status}")
            except (OSError, ValueError) as exc:
                detail = f"control endpoint not answering: {exc}"
        time.sleep(0.1)
    _stop_process(child.pid)
    (state_dir / PID_FILE).unlink(missing_ok=True)
    raise CliError(f"the sandbox was not ready after {timeout:.0f} s (still waiting for: {detail}); "
                   f"{state_dir / LOG_FILE} ends with:\n{_log_tail(state_dir)}")


def cmd_report(args: argparse.Namespace) -> int:
    url = _running_url(Path(args.state_dir).resolve())
    try:
        status, body = _get_json(url + "/report", timeout=30)
    except OSError as exc:
        raise CliError(f"the sandbox at {url} does not answer: {exc}") from exc
    if status != 200:
        raise CliError(f"the sandbox answered HTTP {status}: {json.dumps(body)}")
    json.dump(body, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


def _running_url(state_dir: Path) -> str:
    pid = _read_pid(state_dir)
    url = _sandbox_url(state_dir)
    if pid is None or not _process_alive(pid) or not url:
        raise CliError(f"no sandbox is running in {state_dir}")
    return url


def _post_change(state_dir: str, path: str, body: dict[str, Any], what: str) -> int:
    """POST a change to the running sandbox's control endpoint `path` and print what it did."""
    url = _running_url(Path(state_dir).resolve())
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            answer = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        raise CliError(f"the sandbox refused the {what} (HTTP {exc.code}): {exc.read().decode()}") from exc
    except OSError as exc:
        raise CliError(f"the sandbox at {url} does not answer: {exc}") from exc
    for line in answer["done"] or ["nothing to change"]:
        print(line)
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    """The node group's owner applies its code (a terraform apply, a CloudFormation stack update: aws/owners.py)."""
    body = {"nodegroup": args.nodegroup, "cluster": args.cluster, "ami": args.ami,
            "instance_refresh": None if args.instance_refresh is None else args.instance_refresh == "on"}
    return _post_change(args.state_dir, "/apply", body, "apply")


def cmd_update_cni(args: argparse.Namespace) -> int:
    """The cluster's VPC CNI add-on updated to a release that initializes on a never_ready AMI's nodes, as
    `aws eks update-addon --addon-name vpc-cni` does (EKS user guide "Assign IPs to Pods with the Amazon VPC CNI",
    "Updating the Amazon VPC CNI (Amazon EKS add-on)"): aws-node restarts on each node and writes
    /etc/cni/net.d/10-aws.conflist (aws/amazon-vpc-cni-k8s cmd/aws-vpc-cni/main.go), so the kubelet's
    "cni plugin not initialized" ends and the node reports Ready (kube/nodes.py update_cni)."""
    return _post_change(args.state_dir, "/update-cni", {"cluster": args.cluster, "ami": args.ami}, "CNI update")


def cmd_down(args: argparse.Namespace) -> int:
    state_dir = Path(args.state_dir).resolve()
    pid = _read_pid(state_dir)
    if pid is None:
        print(f"no sandbox recorded in {state_dir}")
        return 0
    if not _process_alive(pid):
        print(f"sandbox (pid {pid}) had already stopped")
    elif not _is_sandbox_process(pid):
        print(f"pid {pid} is no longer a sandbox process; leaving it alone")
    else:
        _stop_process(pid)
        print(f"sandbox (pid {pid}) stopped")
    (state_dir / PID_FILE).unlink(missing_ok=True)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    return serve(resolve_scenario(args.scenario), Path(args.state_dir).resolve(), foreground=False)


class _Interrupted(Exception):
    """SIGTERM/SIGINT arrived while the sandbox was still starting."""


def serve(scenario_path: Path, state_dir: Path, foreground: bool) -> int:
    """Run the sandbox in this process until SIGTERM or SIGINT, then exit the process (never returns)."""
    from .runtime import Sandbox

    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if foreground:  # in the background, stderr already is the log file
        handlers.append(logging.FileHandler(state_dir / LOG_FILE))
    logging.basicConfig(level=logging.INFO, handlers=handlers, force=True,
                        format="%(asctime)s %(levelname)s %(name)s %(threadName)s: %(message)s")
    log = logging.getLogger("eks_sandbox")
    stopping = threading.Event()
    started = False

    def on_signal(signum: int, _frame: Any) -> None:
        stopping.set()
        if not started:
            raise _Interrupted(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    _write_pid(state_dir, os.getpid())
    sandbox = None
    status = 0
    try:
        sandbox = Sandbox(load_scenario(scenario_path), state_dir)
        sandbox.start()
        started = True
        if foreground:
            print(f"sandbox {scenario_path.stem} starting; source {state_dir / ENV_FILE} once ready "
                  f"(Ctrl-C stops it)", file=sys.stderr)
        while not stopping.wait(0.5):
            pass
        log.info("stopping on signal")
    except _Interrupted as exc:
        log.info("interrupted by %s while starting", exc)
    except Exception:
        log.exception("the sandbox failed")
        status = 1
    finally:
        if sandbox is not None:
            sandbox.stop()
        if foreground:
            (state_dir / PID_FILE).unlink(missing_ok=True)
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    # Library threads (moto's server, request handlers) must not keep a stopped sandbox alive.
    os._exit(status)


# ------------------------------------------------------------------------------------------------- entry point

def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="eks-sandbox", description="A local stand-in for an EKS cluster.")
    commands = parser.add_subparsers(dest="command", required=True)

    up = commands.add_parser("up", help="start a sandbox and wait until it is ready")
    up.add_argument("--scenario", required=True, help="scenario YAML file, or the name of a shipped scenario")
    up.add_argument("--state-dir", required=True, help="where env, kubeconfig, pid and sandbox.log go")
    up.add_argument("--foreground", action="store_true", help="run in this process until Ctrl-C")
    up.add_argument("--timeout", type=float, default=DEFAULT_UP_TIMEOUT,
                    help=f"seconds to wait for readiness (default {DEFAULT_UP_TIMEOUT:.0f})")
    up.set_defaults(func=cmd_up)

    report = commands.add_parser("report", help="print the sandbox's observations as JSON")
    report.add_argument("--state-dir", required=True)
    report.set_defaults(func=cmd_report)

    apply = commands.add_parser("apply", help="the node group's infrastructure as code applies (terraform apply, "
                                              "CloudFormation stack update)")
    apply.add_argument("--state-dir", required=True)
    apply.add_argument("--nodegroup", required=True)
    apply.add_argument("--cluster", help="the node group's cluster (required when the scenario has clusters:)")
    apply.add_argument("--ami", help="the AMI (name or id) the code now names; default: unchanged")
    apply.add_argument("--instance-refresh", choices=["on", "off"],
                       help="terraform-aws-eks's instance_refresh, or the stack's AutoScalingRollingUpdate policy "
                            "(both on as shipped); default: unchanged")
    apply.set_defaults(func=cmd_apply)

    update_cni = commands.add_parser(
        "update-cni", help="the cluster's VPC CNI add-on updated (as `aws eks update-addon --addon-name vpc-cni` does) "
                           "to a release that initializes on the nodes of an AMI whose nodes never got Ready",
        description="As an update of the Amazon VPC CNI add-on (EKS user guide \"Assign IPs to Pods with the Amazon "
                    "VPC CNI\", \"Updating the Amazon VPC CNI (Amazon EKS add-on)\"): aws-node restarts on each "
                    "node and writes /etc/cni/net.d/10-aws.conflist (aws/amazon-vpc-cni-k8s "
                    "cmd/aws-vpc-cni/main.go); the kubelet's Ready condition (KubeletNotReady, \"container runtime "
                    "network not ready: ... cni plugin not initialized\") turns True at its next pass and the "
                    "node.kubernetes.io/not-ready taints go. The AMI is unchanged.")
    update_cni.add_argument("--state-dir", required=True)
    update_cni.add_argument("--ami", required=True, help="the AMI's name (a never_ready AMI of the scenario)")
    update_cni.add_argument("--cluster", help="the cluster (required when the scenario has clusters:)")
    update_cni.set_defaults(func=cmd_update_cni)

    down = commands.add_parser("down", help="stop the sandbox recorded in the state dir")
    down.add_argument("--state-dir", required=True)
    down.set_defaults(func=cmd_down)

    serve_cmd = commands.add_parser("serve", help="(internal) run the sandbox in this process")
    serve_cmd.add_argument("--scenario", required=True)
    serve_cmd.add_argument("--state-dir", required=True)
    serve_cmd.set_defaults(func=cmd_serve)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except CliError as exc:
        print(f"eks-sandbox: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
