# -*- coding: utf-8 -*-
# Copyright: Contributors to the eksops.nodegroup project
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job's liveness (SPEC W5, issue 25 item 1): once the job that runs the upgrade is gone, no new eviction,
forced pod deletion, termination, size change, process suspend or resume, or EKS update starts.

"The job is gone" means either of:

- ansible-playbook, the process that forked this one, has ended: the parent pid changed. ansible-runner cancels a
  job, and ends one past its ``job_timeout``, with ``os.killpg(os.getpgid(pid), signal.SIGKILL)`` on the
  ansible-playbook it spawned (ansible-runner src/ansible_runner/runner.py, ``Runner.run`` and
  ``Runner.handle_termination``); that group misses ansible-core's worker, which called ``os.setsid()``
  (ansible-core executor/process/worker.py ``WorkerProcess._detach``), so the worker lives on, reparented;
- the worker received SIGTERM or SIGINT: ansible-playbook's main process forwards both to its workers before it ends
  (ansible-core executor/task_queue_manager.py ``TaskQueueManager._signal_handler``).

The guard is armed by the collection's action plugins, in the worker that runs the task (``arm``), and consulted
by ``check`` right before each destructive call, in the one place each is made: the aws_call functions marked
``stops_with_job`` (aws/<service>.py) and the drain's pod removal (_drain/api.py). A module process never arms it (its
parent is the worker's shell, and a SIGTERM to the worker kills its process group); there ``check`` always passes.

What a stop does, and why (the safest of the choices ansible-core leaves): ansible-core's own handler in the worker
(``WorkerProcess._term``) kills the worker's process group at once, wherever it is: as safe as a crash (every change
is journalled before it is made, SPEC U1-U6), but the run's lease then blocks a relaunch until it lapses, and a
worker orphaned by a SIGKILL of ansible-playbook gets no signal at all and goes on. The guard's handler instead
records the stop and raises JobStopped in the worker's main thread, once: the work unwinds through its ordinary
failure path from wherever it waits (a drain's watch, a termination wait, EKS's update), a step that had started a
change reports it, the lease heartbeats stop, and the action releases the lease (``lease.release``) so the relaunch
is not refused. Any thread that reaches a destructive call after the stop, before the process ends, is refused by
``check``. A watchdog thread turns the parent's end into the same stop (it signals its own process), so the orphaned
worker of an ansible-runner cancel stops within WATCHDOG_SECONDS even in a wait that makes no call; and when the work
has not unwound STOP_GRACE_SECONDS after a stop (a thread that waits out a deadline), the watchdog releases the lease
and ends the worker as ansible-core's handler would have at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
import multiprocessing
import os
import signal
import threading
import time

from ansible_collections.eksops.nodegroup.plugins.module_utils.errors import JOB_STOPPED, UpgradeError

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
WATCHDOG_SECONDS = 1.0
STOP_GRACE_SECONDS = 5.0


class JobStopped(UpgradeError):
    """The job is gone: the destructive call ``action`` (or the work, when raised by the stop signal) was refused."""

    def __init__(self, reason: str, action: str | None = None) -> None:
        super().__init__(
            JOB_STOPPED,
            "The job is gone (%s): %s; the journal on the group says where the upgrade stopped, and a rerun resumes it"
            % (reason, "refused to %s" % action if action else "stopped"), reason=reason, refused=action)


class JobGuard:
    """Whether the job is gone: ``parent`` is the pid of ansible-playbook when the task started (None: not armed,
    never gone), ``stopped_by`` the name of the stop signal received."""

    def __init__(self, parent: int | None = None, getppid: Callable[[], int] = os.getppid) -> None:
        self.parent = parent
        self.getppid = getppid
        self.stopped_by = None
        # Once the work has returned (Armed.quiet), a stop signal is recorded but unwinds nothing: the lease's
        # release after a stop is not cut short by the next signal.
        self.quiet = False

    def gone(self) -> str | None:
        """Why the job is gone, or None while it lives."""
        if self.stopped_by is not None:
            return "the task received %s" % self.stopped_by
        if self.parent is not None and self.getppid() != self.parent:
            return "ansible-playbook, process %d, has ended" % self.parent
        return None

    def check(self, action: str) -> None:
        """Raise JobStopped naming ``action`` when the job is gone; called right before each destructive call."""
        reason = self.gone()
        if reason is not None:
            raise JobStopped(reason, action)

    def on_signal(self, signum: int, _frame: Any) -> None:
        """The stop signal's handler: the first one records the stop and unwinds the main thread; later ones (the
        watchdog's after a SIGTERM, a second Ctrl-C) only find it recorded."""
        if self.stopped_by is not None:
            return
        self.stopped_by = signal.Signals(signum).name
        if not self.quiet:
            raise JobStopped(self.gone())


_GUARD = JobGuard()


def current() -> JobGuard:
    return _GUARD


def check(action: str) -> None:
    """The process's guard (armed or not) on ``action``: raise JobStopped when the job is gone."""
    _GUARD.check(action)


class Armed:
    """The guard armed for one task: the stop signals' handlers and the watchdog, undone by ``disarm``.

    The watchdog turns the parent's end into the stop signal, and bounds the stop: when the work has not returned
    STOP_GRACE_SECONDS after the stop (a drain's thread waits out its deadline for a pod whose eviction was refused),
    it calls ``on_stuck`` (the action releases its leases) and ends the worker with ``os._exit(1)``, as ansible-core's
    own handler does."""

    def __init__(self, guard: JobGuard, on_stuck: Callable[[], None], kill: Callable[[int, int], None] = os.kill,
                 interval: float = WATCHDOG_SECONDS, grace: float = STOP_GRACE_SECONDS,
                 end: Callable[[int], None] = os._exit) -> None:
        self.guard = guard
        self._on_stuck = on_stuck
        self._kill = kill
        self._interval = interval
        self._grace = grace
        self._end = end
        self._done = threading.Event()
        self._previous = dict((signum, signal.signal(signum, guard.on_signal)) for signum in STOP_SIGNALS)
        self._watchdog = threading.Thread(target=self._watch, name="eksops-job-watchdog")
        self._watchdog.daemon = True
        self._watchdog.start()

    def _watch(self) -> None:
        stopped_at = None
        while not self._done.wait(self._interval):
            if self.guard.gone() is None:
                continue
            if stopped_at is None:
                stopped_at = time.monotonic()
                if self.guard.stopped_by is None:
                    # The parent ended: the same stop as a signal, delivered to the main thread by its handler.
                    self._kill(os.getpid(), signal.SIGTERM)
            elif time.monotonic() - stopped_at >= self._grace and not self._done.is_set():
                try:
                    self._on_stuck()
                finally:
                    self._end(1)
                return

    def quiet(self) -> None:
        """The work has returned: no watchdog, and a stop signal from now on unwinds nothing."""
        self.guard.quiet = True
        self._done.set()

    def disarm(self) -> None:
        """The task ends: ansible-core's handlers back (they kill the worker on a later signal), no watchdog."""
        self.quiet()
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)


def started_by() -> int:
    """The pid of the process that started this one: for an ansible-core worker (a multiprocessing child), the
    ansible-playbook that forked it, as recorded at the fork, so a parent killed before the task arms the guard is
    still seen gone; otherwise the parent now."""
    parent = multiprocessing.parent_process()
    return parent.pid if parent is not None else os.getppid()


def arm(on_stuck: Callable[[], None], parent: int | None = None, getppid: Callable[[], int] = os.getppid) -> Armed:
    """Arm the process's guard for a task run in an ansible-core worker (its main thread): ``parent`` is
    ansible-playbook (default: started_by()); ``on_stuck``: what to do before the watchdog ends a worker whose work
    did not unwind."""
    global _GUARD  # pylint: disable=global-statement
    _GUARD = JobGuard(started_by() if parent is None else parent, getppid)
    return Armed(_GUARD, on_stuck)
