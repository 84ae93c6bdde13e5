# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every benchmark script shares: its command line, the table it prints, the JSON it writes, a sandbox
started and stopped through the `eks-sandbox` CLI, and the counts read from the sandbox report.

Sandboxes come from tests/integration/sandbox_helpers.py (the same code the integration tests use), so a
benchmark runs the collection exactly as the tests do: `ansible` / `ansible-playbook` from .venv, with
ANSIBLE_COLLECTIONS_PATH pointing at build/collections.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

REPO_ROOT = Path(__file__).resolve().parents[1]
OUTPUT_DIR = REPO_ROOT / "build" / "benchmarks"
SCENARIO_DIR = REPO_ROOT / "tests" / "sandbox" / "scenarios"
COLLECTIONS_PATH = REPO_ROOT / "build" / "collections"

for _path in (COLLECTIONS_PATH, REPO_ROOT / "tests" / "integration"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))
os.environ.setdefault("ANSIBLE_COLLECTIONS_PATH", str(COLLECTIONS_PATH))

from sandbox_helpers import SandboxHandle, start_sandbox, stop_sandbox  # noqa: E402  (needs the sys.path above)


def argument_parser(description: str, name: str) -> argparse.ArgumentParser:
    """A parser with --json (default build/benchmarks/<name>.json); scripts add their own options."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--json", type=Path, default=OUTPUT_DIR / f"{name}.json",
                        help="where to write the results as JSON (default: %(default)s)")
    return parser


def machine() -> dict[str, Any]:
    """What the figures were measured on; the load average says how busy the shared machine was."""
    return {"cpus": os.cpu_count(), "load_average": [round(v, 2) for v in os.getloadavg()],
            "python": platform.python_version(), "platform": platform.platform(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def write_json(path: Path, results: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": machine(), **results}, indent=2, sort_keys=True, default=str) + "\n")
    print(f"\nJSON written to {path}")


def print_table(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """A plain-text table; floats get three significant decimals at most."""
    def cell(value: Any) -> str:
        if isinstance(value, float):
            return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
        return "-" if value is None else str(value)

    text_rows = [[cell(value) for value in row] for row in rows]
    widths = [max(len(str(column)), *(len(row[index]) for row in text_rows)) for index, column in enumerate(columns)]
    print("  ".join(str(column).ljust(width) for column, width in zip(columns, widths)))
    print("  ".join("-" * width for width in widths))
    for row in text_rows:
        print("  ".join(value.ljust(width) for value, width in zip(row, widths)))


def scenario_path(name_or_path: str) -> Path:
    """A shipped scenario's bare name (`demo`) or a file."""
    path = Path(name_or_path)
    return path if path.suffix in (".yaml", ".yml") else SCENARIO_DIR / f"{name_or_path}.yaml"


@contextlib.contextmanager
def running_sandbox(scenario: str | Path, keep_dir: Path | None = None) -> Iterator[SandboxHandle]:
    """`eks-sandbox up` for the scenario, `down` afterwards (also on failure or Ctrl-C)."""
    with contextlib.ExitStack() as stack:
        if keep_dir is None:
            state_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="eksops-bench-")))
        else:
            state_dir = keep_dir
            state_dir.mkdir(parents=True, exist_ok=True)
        handle = start_sandbox(str(scenario), state_dir)
        try:
            yield handle
        except BaseException:
            log = state_dir / "sandbox.log"
            if log.exists():
                print("sandbox.log (tail):\n" + "\n".join(log.read_text(errors="replace").splitlines()[-40:]),
                      file=sys.stderr)
            raise
        finally:
            handle.close()
            stop_sandbox(state_dir)


def sandbox_peak_rss_mib(sandbox: SandboxHandle) -> float | None:
    """The sandbox process's peak resident set size (VmHWM) so far, in MiB; None if it cannot be read."""
    try:
        pid = int((sandbox.state_dir / "pid").read_text().split()[0])
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def k8s_requests_by_agent(report: dict[str, Any], agent_part: str) -> Counter:
    """The report's Kubernetes requests whose user agent contains agent_part, as {(verb, resource, status): n}."""
    counts: Counter = Counter()
    for key, count in report["k8s_requests"].items():
        agent, verb, resource, status = key.rsplit(" ", 3)
        if agent_part in agent:
            counts[(verb, resource, status)] += count
    return counts


def by_verb(counts: Counter) -> dict[str, int]:
    """{verb: n} summed over resources and statuses."""
    verbs: Counter = Counter()
    for (verb, _resource, _status), count in counts.items():
        verbs[verb] += count
    return dict(sorted(verbs.items()))


def counts_since(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The report counters that grew between two reports, by how much."""
    return {key: after[key] - before.get(key, 0) for key in after if after[key] != before.get(key, 0)}


def aws_calls_total(calls: dict[str, int]) -> int:
    return sum(calls.values())
