"""docs/deploy.md, run as printed on the hosts it names.

A rig of simulated hosts (``data``, ``gw1``, ``gw2``, ``w1``, the monitoring host ``mon``,
the organiser's ``ctl`` and a bot author's ``bots``), each with its own network address and
its own ``/srv``: each block of the manual runs, unchanged, on the host its first line
names, with the files the manual says to copy copied (what ``scp`` would do). A second
worker host is added as the manual says, in the middle of the tournament, and plays part
of it; the monitoring host's Prometheus, with the arena's ``deploy/prometheus`` as it is,
scrapes every gateway and worker host.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from docblocks import Block, block
from hosts_support import wait_until

from arena.rigs.hosts import Host, Rig

SECRETS = block("docs/deploy.md", "secret() { python3")
CERTIFICATES = block("docs/deploy.md", "Thousand Arena CA")
REDIS = block("docs/deploy.md", "tls-port 6379")
POSTGRES = block("docs/deploy.md", "ssl_cert_file = '/srv/arena/pg/server.crt'")
GATEWAY = block("docs/deploy.md", "arena serve --host 0.0.0.0 --port 50051")
WORKER = block("docs/deploy.md", "arena worker --metrics-port 9102")
REGISTER = block("docs/deploy.md", "register my-bot")
BOT = block("docs/deploy.md", "THOUSAND_BOT_TOKEN=TOKEN_OF_MY_BOT")
HOSTED = block("docs/deploy.md", "arena bot submit my-hosted-bot")
TOURNAMENT = block("docs/deploy.md", "cat > cup.yaml")
MONITORING = block("docs/deploy.md", "prometheus --config.file=hosts.yml")
PROMETHEUS_FILES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"


def run(host: Host, doc: Block, **subs: str) -> str:
    """A block of the manual as a bash script on ``host`` (stopping at the first command
    that fails); its output."""
    text = doc.text
    assert text.startswith("# on "), "each block says where it runs"
    for old, new in subs.items():
        assert old in text
        text = text.replace(old, new)
    out = host.shell("set -euo pipefail\n" + text, timeout=300)
    return out.stdout + out.stderr


def copy(source: Host, target: Host, files: dict[str, str]) -> None:
    """Copy ``source:/srv/arena/NAME`` to ``target:/srv/arena/AS`` for each NAME: AS."""
    for name, as_name in files.items():
        dest = target.file(f"/srv/arena/{as_name}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source.file(f"/srv/arena/{name}"), dest)


def platform_files(host: Host, ctl: Host) -> None:
    files = {"arena.env": "arena.env", "tls/ca.crt": "tls/ca.crt"}
    if host.name in ("data", "gw1", "gw2"):
        files |= {f"tls/{host.name}.crt": "tls/server.crt",
                  f"tls/{host.name}.key": "tls/server.key"}
    copy(ctl, host, files)


@pytest.mark.timeout(600)
def test_the_deployment_guide_runs_as_printed_on_separate_hosts() -> None:
    with Rig(delay_ms=2) as rig:
        ctl = rig.add_host("ctl")
        data = rig.add_host("data", ports=(6379, 5432))
        gateways = [rig.add_host(n, ports=(50051, 9101)) for n in ("gw1", "gw2")]
        w1 = rig.add_host("w1", ports=(9102,))
        bots = rig.add_host("bots")
        mon = rig.add_host("mon", ports=(9090,))
        try:
            run(ctl, SECRETS)
            run(ctl, CERTIFICATES)
            assert (ctl.file("/srv/arena/arena.env").stat().st_mode & 0o077) == 0
            for host in (data, *gateways, w1):
                platform_files(host, ctl)
            run(data, REDIS)
            run(data, POSTGRES)
            for gw in gateways:
                run(gw, GATEWAY)
            run(w1, WORKER)
            shutil.copytree(PROMETHEUS_FILES, mon.file("/srv/arena/prometheus"))
            run(mon, MONITORING)
            lines = run(ctl, REGISTER).strip().splitlines()
            tokens = {line.split()[1].rstrip(";"): lines[i + 1]
                      for i, line in enumerate(lines) if line.startswith("registered ")}
            shutil.copy2(ctl.file("/srv/arena/tls/ca.crt"), bots.home / "ca.crt")
            run(bots, BOT, TOKEN_OF_MY_BOT=tokens["my-bot"])
            submitted = run(bots, HOSTED, TOKEN_OF_MY_HOSTED_BOT=tokens["my-hosted-bot"])
            assert "passed its check" in submitted, submitted
            wait_until(lambda: _connected(ctl) or not bots.pids(), 60, "the bot to connect")
            assert bots.pids(), (bots.home / "bot.log").read_text()
            # The tournament, on the organiser's machine; a worker host joins meanwhile.
            script = TOURNAMENT.text
            tournament = ctl.spawn("tournament", ["bash", "-c", "set -euo pipefail\n" + script])
            wait_until(lambda: "games" in tournament.log_text() or not tournament.alive(), 180,
                       "the tournament to start")
            w2 = rig.add_host("w2", ports=(9102,))
            platform_files(w2, ctl)
            run(w2, WORKER)
            assert tournament.proc.wait(300) == 0, tournament.log_tail(40)
            out = tournament.log_text()
            assert "cup: finished" in out and "24 stored" in out, out[-2000:]
            board = out.split("cup: finished")[-1]  # the leaderboard
            assert "my-bot" in board and "my-hosted-bot@" in board, board
            rows = _rows(ctl)
            assert len(rows) == 24 and {r[1] for r in rows} == {"completed"}
            played_on = {r[0].split(":")[0].split("@")[-1] for r in rows}  # worker@w1
            assert played_on == {"w1", "w2"}, played_on
            assert all(s == 0 for r in rows for s in r[2])
            # Every gateway and worker host is scraped, w2 too (named in targets/workers.yml).
            wanted = {("gateway", "gw1:9101"), ("gateway", "gw2:9101"), ("worker", "w1:9102"),
                      ("worker", "w2:9102")}
            wait_until(lambda: wanted <= _up(ctl), 60, "Prometheus to scrape every host", 2.0)
        except BaseException:
            for host in rig.hosts.values():
                where = host.file("/srv/arena")
                logs = sorted(where.glob("*.log")) if where.exists() else []
                for log in [*logs, *host.home.glob("*.log")]:
                    print(f"--- {host.name}: {log.name}\n{log.read_text()[-3000:]}")
            raise


def _connected(ctl: Host) -> bool:
    """Whether my-bot has an instance on a gateway (asked as the organiser would)."""
    script = ("cd /srv/arena && set -a && . ./arena.env && set +a && "
              "for gw in gw1 gw2; do arena bot --gateway $gw:50051 list --json; done")
    out = ctl.shell(script, check=False).stdout
    return '"instances": 1' in out


def _rows(ctl: Host) -> list[tuple[str, str, list[int]]]:
    """(worker, status, strikes) of each stored match, read on the organiser's machine."""
    code = (
        "import json, os\n"
        "from arena.tournament.store import ResultStore\n"
        "with ResultStore(os.environ['ARENA_DB_URL'], create=False) as s:\n"
        "    print(json.dumps([[r.worker, r.status, r.strikes] "
        "for r in s.iter_results('cup')]))\n"
    )
    out = ctl.shell("cd /srv/arena && set -a && . ./arena.env && set +a && "
                    f"python3 -c {_quote(code)}")
    return [tuple(r) for r in json.loads(out.stdout.strip().splitlines()[-1])]


def _up(ctl: Host) -> set[tuple[str, str]]:
    """(job, instance) of every target the monitoring host's Prometheus finds up, asked
    from the organiser's machine."""
    code = ("import json, urllib.request\n"
            "url = 'http://mon:9090/api/v1/query?query=up%3D%3D1'\n"
            "print(json.dumps(json.load(urllib.request.urlopen(url, timeout=10))))")
    out = ctl.run(["python3", "-c", code], check=False)
    if out.returncode != 0:
        return set()
    found = json.loads(out.stdout)["data"]["result"]
    return {(r["metric"]["job"], r["metric"]["instance"]) for r in found}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"
