"""A process forked while another thread updates a metric must still be able to update one.

In multiprocess mode every metric update takes one process-wide lock of prometheus-client.
A Celery master updates a metric from its queue-depth sampler thread while it forks pool
children; a child forked at that moment would inherit the lock held and hang at its first
metric update, in the middle of its first match.  The arena's threads update inside
``metrics_thread_updates()``, which every fork waits for.  The script below makes the
moment certain: a thread is inside an update, made long, while the main thread forks.
Only the script's "unguarded" mode looks inside prometheus-client, to hold its lock the
way an update does and show that the hazard is real; the arena itself never reaches it.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from obs_support import run_python

FORK_SCRIPT = textwrap.dedent(
    """
    import contextlib, json, os, sys, threading, time

    from arena.observability.exposition import (
        install_celery_metrics, metrics_text, metrics_thread_updates, prepare_multiprocess_dir)

    directory, mode, patience = sys.argv[1], sys.argv[2], float(sys.argv[3])
    prepare_multiprocess_dir(directory)
    from arena.observability import metrics as m

    def prometheus_lock():
        # prometheus-client's lock, from the closure of its value class: test code only.
        from prometheus_client import values
        method = values.ValueClass.inc
        return method.__closure__[method.__code__.co_freevars.index("lock")].cell_contents

    if mode == "celery":
        # The wiring every Celery worker of the arena uses, fired as the worker fires it.
        from celery import signals
        install_celery_metrics(None, sample_queues=False)
        signals.worker_init.send(sender=None)
        update = metrics_thread_updates
    else:
        update = prometheus_lock
    held, forked = threading.Event(), threading.Event()
    left = {}

    def metrics_thread():
        with update() if mode == "celery" else prometheus_lock():
            held.set()
            forked.wait(0.5)  # an update made long: released by the fork, or after 0.5 s
            m.QUEUE_DEPTH.labels(queue="arena").set(3) if mode == "celery" else None
        left["at"] = time.monotonic()

    thread = threading.Thread(target=metrics_thread)
    thread.start()
    held.wait()
    pid = os.fork()
    if pid == 0:
        m.DEALS_TOTAL.inc(7)
        os._exit(0)
    forked_at = time.monotonic()
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
    print(json.dumps({"child": outcome, "text": metrics_text().decode(),
                      "fork_waited": forked_at >= left["at"]}))
    """
)


def fork_while_locked(tmp_path: Path, mode: str, patience: float) -> dict[str, object]:
    script = tmp_path / "fork.py"
    script.write_text(FORK_SCRIPT)
    out = run_python(
        f"import runpy, sys; sys.argv = ['fork.py', {str(tmp_path / 'metrics')!r}, "
        f"{mode!r}, '{patience}']; runpy.run_path({str(script)!r}, run_name='__main__')",
        env={"PROMETHEUS_MULTIPROC_DIR": None},
        timeout=120,
    )
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def test_a_child_forked_while_a_metrics_thread_holds_the_lock_can_update_metrics(
    tmp_path: Path,
) -> None:
    result = fork_while_locked(tmp_path, "celery", patience=60)
    assert result["child"] == "exit 0"
    assert result["fork_waited"], "the fork did not wait for the thread's update"
    assert "arena_deals_total 7.0" in str(result["text"])
    assert 'arena_queue_depth{queue="arena"} 3.0' in str(result["text"])


def test_without_the_guard_such_a_child_hangs(tmp_path: Path) -> None:
    """The situation above is real: unguarded, the child never gets past its update."""
    result = fork_while_locked(tmp_path, "unguarded", patience=2)
    assert result["child"] == "hung"
    assert "arena_deals_total 7.0" not in str(result["text"])


def test_single_process_mode_needs_no_guard() -> None:
    out = run_python(
        "from arena.observability.exposition import hold_metrics_lock_across_fork\n"
        "print(hold_metrics_lock_across_fork())\n",
        env={"PROMETHEUS_MULTIPROC_DIR": None, "prometheus_multiproc_dir": None},
    )
    assert out.split() == ["False"]


def test_a_sampler_talking_to_redis_holds_forks_back() -> None:
    """The queue-depth sampler's network I/O (TLS with a rediss:// broker runs inside
    OpenSSL, whose locks a forked child would inherit held) is a block every fork waits
    for: a silent broker keeps the sampler inside it, and a fork made meanwhile waits until
    the sampler gives up."""
    script = textwrap.dedent(
        """
        import json, os, socket, threading, time
        from arena.observability import exposition

        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        port = silent.getsockname()[1]

        def _sample(port):
            try:
                exposition.sample_queue_depth(f"redis://127.0.0.1:{port}/0", ["arena"])
            except Exception:
                pass

        thread = threading.Thread(target=_sample, args=(port,), daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not exposition._thread_io.locked() and time.monotonic() < deadline:
            time.sleep(0.01)
        held = exposition._thread_io.locked()
        started = time.monotonic()
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        waited = time.monotonic() - started
        os.waitpid(pid, 0)
        print(json.dumps({"held": held, "waited": waited}))
        """
    )
    out = json.loads(run_python(script).strip().splitlines()[-1])
    assert out["held"] is True
    assert out["waited"] >= 1.0  # the fork waited for the sampler's 5 s read to give up
