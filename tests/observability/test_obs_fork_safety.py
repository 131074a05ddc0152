"""A process forked while another thread updates a metric must still be able to update one.

In multiprocess mode every metric update takes one process-wide lock.  A Celery master
updates a metric from its queue-depth sampler thread while it forks pool children; a child
forked at that moment would inherit the lock held and hang at its first metric update, in
the middle of its first match.  The script below makes that moment certain: a thread holds
the lock while the main thread forks.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from obs_support import run_python

FORK_SCRIPT = textwrap.dedent(
    """
    import json, os, sys, threading, time

    from arena.observability.exposition import (
        install_celery_metrics, metrics_text, prepare_multiprocess_dir, shared_metrics_lock)

    directory, mode, patience = sys.argv[1], sys.argv[2], float(sys.argv[3])
    prepare_multiprocess_dir(directory)
    from arena.observability import metrics as m

    if mode == "celery":
        # The wiring every Celery worker of the arena uses, fired as the worker fires it.
        from celery import signals
        install_celery_metrics(None, sample_queues=False)
        signals.worker_init.send(sender=None)

    lock = shared_metrics_lock()
    assert lock is not None, "multiprocess mode has no shared lock?"
    held, forked = threading.Event(), threading.Event()

    def metrics_thread():
        with lock:  # what a metric update does, for a moment made long
            held.set()
            forked.wait(0.5)  # released when the fork happened, or by the guard's wait

    thread = threading.Thread(target=metrics_thread)
    thread.start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        m.DEALS_TOTAL.inc(7)
        os._exit(0)
    forked.set()
    thread.join()
    deadline = time.monotonic() + patience
    outcome = "hung"
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            outcome = f"exit {os.waitstatus_to_exitcode(status)}"
            break
        time.sleep(0.02)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    print(json.dumps({"child": outcome, "text": metrics_text().decode()}))
    """
)


def fork_while_locked(tmp_path: Path, mode: str, patience: float) -> dict[str, str]:
    script = tmp_path / "fork.py"
    script.write_text(FORK_SCRIPT)
    out = run_python(
        f"import runpy, sys; sys.argv = ['fork.py', {str(tmp_path / 'metrics')!r}, "
        f"{mode!r}, '{patience}']; runpy.run_path({str(script)!r}, run_name='__main__')",
        env={"PROMETHEUS_MULTIPROC_DIR": None},
        timeout=120,
    )
    result: dict[str, str] = json.loads(out.strip().splitlines()[-1])
    return result


def test_a_child_forked_while_a_metrics_thread_holds_the_lock_can_update_metrics(
    tmp_path: Path,
) -> None:
    result = fork_while_locked(tmp_path, "celery", patience=60)
    assert result["child"] == "exit 0"
    assert "arena_deals_total 7.0" in result["text"]


def test_without_the_guard_such_a_child_hangs(tmp_path: Path) -> None:
    """The situation above is real: unguarded, the child never gets past its update."""
    result = fork_while_locked(tmp_path, "unguarded", patience=2)
    assert result["child"] == "hung"
    assert "arena_deals_total 7.0" not in result["text"]


def test_single_process_mode_needs_no_guard() -> None:
    out = run_python(
        "from arena.observability.exposition import (hold_metrics_lock_across_fork, "
        "shared_metrics_lock)\n"
        "print(shared_metrics_lock(), hold_metrics_lock_across_fork())\n",
        env={"PROMETHEUS_MULTIPROC_DIR": None, "prometheus_multiproc_dir": None},
    )
    assert out.split() == ["None", "False"]
