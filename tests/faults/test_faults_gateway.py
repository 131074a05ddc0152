"""A gateway restarted under remote bots in the middle of a tournament: the bots reconnect,
the decisions asked meanwhile wait in Redis for the new gateway, the tournament finishes.

Real parts only: redis-server, ``arena serve --routing`` as a process (killed outright,
then started again on the same port and bot registry), the built-in bots as SDK bot
processes, and ``arena tournament run`` on the local pool.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from tournament_support import REPO, wait_for

from arena.engine import replay as rp
from arena.rigs.processes import BotProcess, GatewayProcess, RedisProcess, stop_all
from arena.tournament.store import ResultStore

ORGANISER = "org-fault-test"
BOTS = {"g": "arena.server.builtin_remote:Greedy", "r": "arena.server.builtin_remote:Random"}


def test_a_gateway_restart_under_remote_bots_is_survived(tmp_path: Path) -> None:
    redis = RedisProcess.start(tmp_path / "redis", tmp_path / "redis.log")
    gateways = [
        GatewayProcess.start(
            db_path=tmp_path / "gateway.sqlite3",
            log_path=tmp_path / "gateway-1.log",
            organiser_token=ORGANISER,
            routing_url=redis.url,
        )
    ]
    bots: list[BotProcess] = []
    run: subprocess.Popen[str] | None = None
    db_file = tmp_path / "results.sqlite3"
    try:
        first = gateways[0]
        for name, ref in BOTS.items():
            bots.append(
                BotProcess.start(
                    name=name,
                    bot_ref=ref,
                    server=first.address,
                    token=first.register(name),
                    log_path=tmp_path / f"bot-{name}.log",
                )
            )
        first.wait_instances(BOTS, bots=bots)
        spec: dict[str, Any] = {
            "name": "gateway-cup",  # remote bots: the deals come from a secret
            "rules": "classic",
            "participants": [
                {"name": "g", "bot": "remote:g"},
                {"name": "r", "bot": "remote:r"},
                "random",
            ],
            "format": "duplicate",
            "sets": 4,
            "max_deals": 3,
            # Room for the gateway's restart inside one decision's time.
            "time_control": {"decision_ms": 4000, "bank_ms": 8000, "strike_limit": 3},
            "executor": {"type": "local", "workers": 2, "routing": redis.url},
            "db": f"sqlite:///{db_file}",
        }
        path = tmp_path / "cup.yaml"
        path.write_text(yaml.safe_dump(spec))
        env = dict(os.environ, PYTHONPATH=str(REPO))
        run = subprocess.Popen(
            [sys.executable, "-m", "arena.cli", "tournament", "run", str(path)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

        def count() -> int:
            if not db_file.exists():
                return 0
            try:
                with ResultStore(f"sqlite:///{db_file}", create=False) as store:
                    return store.count("gateway-cup")
            except Exception:
                return 0

        wait_for(lambda: count() >= 4, timeout=180, interval=0.2, what="four results")
        port = first.port
        first.kill()  # outright: no goodbye to the bots
        gateways.append(
            GatewayProcess.start(
                db_path=tmp_path / "gateway.sqlite3",
                log_path=tmp_path / "gateway-2.log",
                organiser_token=ORGANISER,
                routing_url=redis.url,
                extra=["--port", str(port)],
            )
        )
        gateways[1].wait_instances(BOTS, bots=bots, timeout=60)
        out, _ = run.communicate(timeout=300)
    finally:
        if run is not None and run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
        stop_all(bots)
        for g in gateways:
            g.stop()
        redis.stop()
    assert run.returncode == 0, out
    assert "Traceback" not in out
    assert "gateway-cup: finished" in out
    with ResultStore(f"sqlite:///{db_file}", create=False) as store:
        records = list(store.iter_results("gateway-cup", with_replay=True))
    assert len(records) == 24
    assert sorted(r.index for r in records) == list(range(24))
    for r in records:
        assert rp.verify(r.replay) is None
    # Both bots came back to the new gateway, which served their requests.
    log = gateways[1].log_text()
    assert "routing: serving requests for bot g" in log
    assert "routing: serving requests for bot r" in log
