# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Evictions paced by the PodDisruptionBudgets' own disruptionsAllowed (P1, P4, S5)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any
import threading

from ansible_collections.eksops.nodegroup.plugins.module_utils._drain import eviction
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.watch import (
    Waker,
    list_then_watch,
)
from ansible_collections.eksops.nodegroup.plugins.module_utils.kube.label_selector import selector_matches

if TYPE_CHECKING:
    from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.api import KubeApi
    from ansible_collections.eksops.nodegroup.plugins.module_utils._drain.scheduler import EvictionScheduler, RemovalJob


# How long a drain waits for the first LIST of a namespace's PDBs before evicting without pacing.
FIRST_LIST_WAIT_SECONDS = 30
PDB_WATCH_SECONDS = 300


def matching_pdbs(pod: Mapping[str, Any], pdbs: Iterable[Mapping[str, Any]]) -> list[str]:
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return sorted((pdb.get("metadata") or {}).get("name") for pdb in pdbs
                  if selector_matches((pdb.get("spec") or {}).get("selector"), labels))


def no_disruption_reason(pdb_name: str) -> str:
    """Why a pod its only PodDisruptionBudget holds is not evicted."""
    return "PodDisruptionBudget %s allows no disruption" % pdb_name


class BudgetGate:
    """Paces evictions by the PodDisruptionBudgets' own ``status.disruptionsAllowed`` (P1, P4, S5).

    kubectl sends every eviction at once and retries each refused pod every 5 s, so a budget that allows one
    disruption at a time costs a 429 per blocked pod per 5 s. Here one LIST+WATCH of the PDBs per namespace
    keeps the budgets' state current; an eviction of a pod covered by exactly one PDB is sent only while that
    budget has a disruption left (counted down locally as evictions are accepted, corrected by every watch
    event). Pods waiting for a budget hold no worker and cost no request: they are parked and released when
    the watch shows the budget has room again. In case our view is behind the server's, one eviction per
    budget is still sent every eviction.PDB_RETRY_SECONDS (kubectl's retry interval, but per budget instead of per
    pod). Pods covered by no PDB or by several go straight to the server, which decides.
    """

    def __init__(self, api: KubeApi, scheduler: EvictionScheduler, log: Callable[[str], None],
                 retry_seconds: float = eviction.PDB_RETRY_SECONDS) -> None:
        self.api = api
        self.retry_seconds = retry_seconds
        self.scheduler = scheduler
        self.log = log
        self._lock = threading.Lock()
        self._namespaces = {}   # namespace -> {"ready": Event, "pdbs": list or None, "waker": Waker}
        self._allowed = {}      # (namespace, pdb name) -> disruptions we may still spend
        self._parked = {}       # (namespace, pdb name) -> [jobs]
        self._last_probe = {}   # (namespace, pdb name) -> clock time of the last eviction sent without room
        self._stopped = False

    def budget_of(self, pod: Mapping[str, Any]) -> tuple[str, str] | None:
        """The (namespace, name) of the pod's only PDB, or None (no PDB, several, or PDBs not watchable)."""
        namespace = pod["metadata"].get("namespace")
        state = self._namespace(namespace)
        state["ready"].wait(FIRST_LIST_WAIT_SECONDS)
        pdbs = state["pdbs"]
        if not pdbs:
            return None
        names = matching_pdbs(pod, pdbs)
        return (namespace, names[0]) if len(names) == 1 else None

    def longest_first(self, pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``pods`` in the order that ends their drain soonest: a drain lasts as long as its longest chain of budget
        rounds, so the pods of the budget that needs the most rounds (its pods here over the disruptions it allows
        now) go first, and those no single budget paces last; the order is kept otherwise (issue 11 item 4: in list
        order a budget allowing one disruption at a time started its chain after every other pod of the node)."""
        budgets = [self.budget_of(pod) for pod in pods]
        counts = Counter(budget for budget in budgets if budget is not None)
        with self._lock:
            allowed = dict(self._allowed)

        def rounds(budget: tuple[str, str] | None) -> int:
            return 0 if budget is None else -(-counts[budget] // max(1, allowed.get(budget, 0)))

        order = sorted(range(len(pods)), key=lambda index: -rounds(budgets[index]))
        return [pods[index] for index in order]

    def admit(self, job: RemovalJob, now: float) -> bool:
        """Whether ``job`` may send its eviction now; otherwise it is parked until the budget has room."""
        if job.budget is None:
            return True
        with self._lock:
            if self._allowed.get(job.budget, 0) > 0:
                self._allowed[job.budget] -= 1
                return True
            last_probe = self._last_probe.get(job.budget)
            if last_probe is None or now - last_probe >= self.retry_seconds:
                self._last_probe[job.budget] = now
                return True
            self._park(job)
            return False

    def refused(self, job: RemovalJob) -> None:
        """The server refused although our view had room: our view was stale."""
        if job.budget is None:
            return
        with self._lock:
            self._allowed[job.budget] = 0
            self._park(job)

    def _park(self, job: RemovalJob) -> None:
        parked = self._parked.setdefault(job.budget, [])
        if job not in parked:
            parked.append(job)

    def stop(self) -> None:
        with self._lock:
            self._stopped = True
            states = list(self._namespaces.values())
        for state in states:
            state["waker"].wake()

    def _namespace(self, namespace: str) -> dict[str, Any]:
        with self._lock:
            state = self._namespaces.get(namespace)
            if state is None:
                state = dict(ready=threading.Event(), pdbs=None, waker=Waker())
                self._namespaces[namespace] = state
                thread = threading.Thread(target=self._watch, args=(namespace, state),
                                          name="eksops-pdb-%s" % namespace)
                thread.daemon = True
                thread.start()
        return state

    def _watch(self, namespace: str, state: dict[str, Any]) -> None:
        list_func = self.api.counted(self.api.policy.list_namespaced_pod_disruption_budget)

        def update(objects: Mapping[tuple[str, str | None], dict[str, Any]]) -> bool:
            self._update(namespace, state, objects)
            return self._stopped

        try:
            while not self._stopped:
                list_then_watch(list_func, timeout=PDB_WATCH_SECONDS, condition=update, waker=state["waker"],
                                clock=self.api.clock, namespace=namespace)
        except Exception as exc:  # pylint: disable=broad-except
            # Without the PDBs' state every eviction goes to the server, as kubectl does.
            self.log("cannot watch PodDisruptionBudgets in namespace %s (%s); evicting without pacing"
                     % (namespace, exc))
            with self._lock:
                state["pdbs"] = []
                released = [job for key, jobs in self._parked.items() if key[0] == namespace for job in jobs]
                for key in [key for key in self._parked if key[0] == namespace]:
                    del self._parked[key]
            for job in released:
                job.budget = None
                self.scheduler.submit(job)
        finally:
            state["ready"].set()

    def _update(self, namespace: str, state: dict[str, Any], objects: Mapping[tuple[str, str | None], dict[str, Any]]) -> None:
        released = []
        with self._lock:
            state["pdbs"] = list(objects.values())
            for pdb in state["pdbs"]:
                key = (namespace, pdb["metadata"]["name"])
                allowed = int((pdb.get("status") or {}).get("disruptionsAllowed") or 0)
                self._allowed[key] = allowed
                parked = self._parked.get(key) or []
                while parked and len(released) < allowed:
                    released.append(parked.pop(0))
        state["ready"].set()
        for job in released:
            self.scheduler.submit(job)
