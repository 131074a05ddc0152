"""Static checks of the deployment: Prometheus config and rules, compose file, dashboards.

There is no container engine in CI, so the compose file is checked against the Compose
specification's schema and for the references between its parts; Prometheus files go
through promtool; dashboards are checked here and queried for real in
``test_obs_prometheus.py``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from obs_support import PROMTOOL, REPO

PROM_DIR = REPO / "deploy" / "prometheus"
COMPOSE_FILE = REPO / "docker-compose.yml"
DASHBOARD_DIR = REPO / "dashboards"
PROVISIONING = DASHBOARD_DIR / "provisioning"


def promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PROMTOOL, *args], capture_output=True, text=True, check=False, timeout=120, cwd=PROM_DIR
    )


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def compose() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(COMPOSE_FILE)
    return data


def dashboards() -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted(DASHBOARD_DIR.glob("*.json"))}


# --- Prometheus ----------------------------------------------------------------------------


@pytest.mark.parametrize("config", ["prometheus.yml", "hosts.yml"])
def test_promtool_check_config(config: str) -> None:
    result = promtool("check", "config", config)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 rule files found" in result.stdout


def test_promtool_check_rules() -> None:
    result = promtool("check", "rules", "alerts.yml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_rule_unit_tests() -> None:
    result = promtool("test", "rules", "alerts_test.yml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_alert_has_a_firing_and_a_quiet_case() -> None:
    alerts = {
        rule["alert"]
        for group in load_yaml(PROM_DIR / "alerts.yml")["groups"]
        for rule in group["rules"]
        if "alert" in rule
    }
    firing: set[str] = set()
    quiet: set[str] = set()
    for case in load_yaml(PROM_DIR / "alerts_test.yml")["tests"]:
        for check in case.get("alert_rule_test", []):
            (firing if check.get("exp_alerts") else quiet).add(check["alertname"])
    assert alerts - firing == set(), "alerts never tested firing"
    assert alerts - quiet == set(), "alerts never tested staying quiet"
    for group in load_yaml(PROM_DIR / "alerts.yml")["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["severity"] in ("warning", "critical")
            assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_promtool_rejects_a_broken_rule(tmp_path: Path) -> None:
    """The checks above would catch a mistake: promtool is not a rubber stamp."""
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "groups:\n  - name: x\n    rules:\n      - alert: Broken\n"
        "        expr: sum(rate(arena_decisions_total[5m])\n"
    )
    result = promtool("check", "rules", str(broken))
    assert result.returncode != 0


# --- compose -------------------------------------------------------------------------------


def test_compose_file_matches_the_compose_specification() -> None:
    checker = Path(sys.executable).parent / "check-jsonschema"
    result = subprocess.run(
        [str(checker), "--builtin-schema", "vendor.compose-spec", str(COMPOSE_FILE)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_dependencies_exist_and_wait_for_health() -> None:
    services = compose()["services"]
    for name, service in services.items():
        for dep, how in (service.get("depends_on") or {}).items():
            assert dep in services, f"{name} depends on unknown service {dep}"
            assert how["condition"] in ("service_healthy", "service_started")
            if how["condition"] == "service_healthy":
                assert "healthcheck" in services[dep], f"{dep} has no healthcheck"
    for name in ("redis", "gateway", "worker", "prometheus", "grafana"):
        assert name in services
        assert "healthcheck" in services[name], f"{name} has no healthcheck"
    assert services["gateway"]["depends_on"]["redis"]["condition"] == "service_healthy"
    assert services["worker"]["depends_on"]["redis"]["condition"] == "service_healthy"
    assert services["grafana"]["depends_on"]["prometheus"]["condition"] == "service_healthy"


def test_workers_can_scale() -> None:
    worker = compose()["services"]["worker"]
    assert worker["deploy"]["replicas"] >= 1
    # A fixed name or a published host port would make --scale worker=N fail.
    assert "container_name" not in worker
    assert "ports" not in worker
    assert worker["environment"]["PROMETHEUS_MULTIPROC_DIR"] in worker["tmpfs"]
    assert worker["command"][:2] == ["arena", "worker"]
    assert "--metrics-port" in worker["command"]


def _host_path(service: dict[str, Any], container_path: str) -> Path:
    """The file in the repository that a bind mount shows at ``container_path``."""
    for source, target in _mounts(service):
        if source.startswith(".") and PurePosixPath(container_path).is_relative_to(target):
            return REPO / source / PurePosixPath(container_path).relative_to(target)
    raise AssertionError(f"{container_path} is not in a bind mount")


def _option(command: list[str], name: str) -> str:
    assert command.count(name) == 1, f"{name} not given once in {command}"
    return command[command.index(name) + 1]


def test_demo_tournament_runs_an_example_on_the_workers() -> None:
    from arena.tournament.spec import load_spec

    services = compose()["services"]
    tournament = services["tournament"]
    # Only with `docker compose --profile demo up`: a plain `up` plays nothing.
    assert tournament["profiles"] == ["demo"]
    for name, service in services.items():
        if name.startswith(("data-", "host-")):
            # A role of a multi-host deployment (docs/deploy.md): never in a plain `up`.
            assert service["profiles"], name
        elif name not in ("tournament", "gateway-2"):
            assert "profiles" not in service, f"{name} would not start without a profile"
            assert "tournament" not in (service.get("depends_on") or {})
    command = [str(arg) for arg in tournament["command"]]
    assert command[:3] == ["arena", "tournament", "run"]
    spec_file = _host_path(tournament, command[3])
    assert spec_file.parent == REPO / "examples"
    assert _option(command, "--executor") == "celery"
    assert _option(command, "--metrics-port") == "9103"
    db = _option(command, "--db")
    assert db.startswith("postgresql://")  # the store the workers write to (see the compose test)
    # The spec is valid and plays built-in bots, which the workers have.
    spec = load_spec(spec_file).with_overrides(executor="celery", db=db)
    assert spec.executor.type == "celery"
    assert all(not p.bot.startswith("remote:") for p in spec.participants)
    # Matches go to the workers through the stack's broker, once they are ready.
    assert "ARENA_BROKER_URL" in tournament["environment"]
    assert tournament["depends_on"]["worker"]["condition"] == "service_healthy"
    assert tournament["depends_on"]["redis"]["condition"] == "service_healthy"
    # Prometheus is ready before the first match, so the whole run is scraped.
    assert tournament["depends_on"]["prometheus"]["condition"] == "service_healthy"


def test_prometheus_scrapes_the_demo_tournament() -> None:
    config = load_yaml(PROM_DIR / "prometheus.yml")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    # Discovered, not listed: without the demo profile there is simply no target.
    assert jobs["tournament"]["dns_sd_configs"] == [
        {"names": ["tournament"], "type": "A", "port": 9103, "refresh_interval": "5s"}
    ]


def _mounts(service: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for volume in service.get("volumes") or []:
        if isinstance(volume, str):
            source, target = volume.split(":")[:2]
        else:
            source, target = volume["source"], volume["target"]
        out.append((source, target))
    return out


def test_compose_mounts_and_volumes_exist() -> None:
    data = compose()
    declared = set((data.get("volumes") or {}).keys())
    used: set[str] = set()
    for name, service in data["services"].items():
        for source, _target in _mounts(service):
            if source.startswith((".", "/")):
                assert (REPO / source).exists(), f"{name} mounts missing {source}"
            else:
                assert source in declared, f"{name} uses undeclared volume {source}"
                used.add(source)
        build = service.get("build")
        if build:
            context = REPO / build["context"]
            assert (context / build["dockerfile"]).is_file()
    assert declared == used, "declared volumes nobody uses"


def test_dockerfile_copies_files_that_exist() -> None:
    dockerfile = (REPO / "deploy" / "Dockerfile").read_text()
    sources = []
    for line in dockerfile.splitlines():
        parts = line.split()
        if parts[:1] == ["COPY"] and not any(p.startswith("--from") for p in parts):
            sources += parts[1:-1]
    assert sources
    for source in sources:
        assert (REPO / source).exists(), f"Dockerfile copies missing {source}"
    assert "pip install ." in dockerfile


def test_prometheus_jobs_target_compose_services() -> None:
    services = compose()["services"]
    config = load_yaml(PROM_DIR / "prometheus.yml")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert {"gateway", "worker"} <= set(jobs)
    for name, job in jobs.items():
        targets: list[tuple[str, int]] = []
        for static in job.get("static_configs", []):
            for target in static["targets"]:
                host, port = target.rsplit(":", 1)
                targets.append((host, int(port)))
        for dns in job.get("dns_sd_configs", []):
            targets += [(host, int(dns["port"])) for host in dns["names"]]
        assert targets, f"job {name} scrapes nothing"
        for host, port in targets:
            assert host in services, f"job {name} targets {host}, not a compose service"
            service = services[host]
            listens = {str(a) for a in service.get("command") or []}
            listens |= {str(p).split(":")[-1] for p in service.get("ports") or []}
            assert str(port) in listens, f"{host} does not listen on {port}"
    # Workers scale, so they must be discovered, not listed.
    assert "dns_sd_configs" in jobs["worker"]
    # The rule files Prometheus loads are mounted next to its config.
    mounts = dict(_mounts(services["prometheus"]))
    assert mounts.get("./deploy/prometheus") == "/etc/prometheus"
    for rule_file in config["rule_files"]:
        assert (PROM_DIR / rule_file).is_file()


def test_the_monitoring_role_scrapes_the_machines_as_the_stack_scrapes_its_services() -> None:
    """hosts.yml (the compose file's monitoring profile, or Prometheus on a host of its
    own) has the jobs of prometheus.yml, so the alerts and dashboards are the same; its
    targets are the files of targets/, each a valid list of target groups, naming the hosts
    of docs/deploy.md on the ports their roles listen on."""
    stack = {job["job_name"] for job in load_yaml(PROM_DIR / "prometheus.yml")["scrape_configs"]}
    config = load_yaml(PROM_DIR / "hosts.yml")
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == stack
    assert config["rule_files"] == load_yaml(PROM_DIR / "prometheus.yml")["rule_files"]
    ports = {"gateway": "9101", "worker": "9102", "tournament": "9103"}
    for name, port in ports.items():
        [sd] = jobs[name]["file_sd_configs"]
        for pattern in sd["files"]:
            [path] = list(PROM_DIR.glob(pattern))
            groups = load_yaml(path)
            assert isinstance(groups, list), path
            for group in groups:
                assert set(group) <= {"targets", "labels"}, path
                for target in group["targets"]:
                    assert target.rsplit(":", 1)[1] == port, (path, target)
    gateways = [t for g in load_yaml(PROM_DIR / "targets" / "gateways.yml") for t in g["targets"]]
    workers = [t for g in load_yaml(PROM_DIR / "targets" / "workers.yml") for t in g["targets"]]
    assert gateways == ["gw1:9101", "gw2:9101"] and workers == ["w1:9102", "w2:9102"]
    services = compose()["services"]
    prometheus = services["host-prometheus"]
    assert prometheus["profiles"] == ["monitoring"]
    assert "--config.file=/etc/prometheus/hosts.yml" in prometheus["command"]
    assert dict(_mounts(prometheus))["./deploy/prometheus"] == "/etc/prometheus"
    assert prometheus["image"] == services["prometheus"]["image"]
    # Grafana's data source names Prometheus "prometheus": the role's Prometheus answers
    # to that name on its network.
    assert "prometheus" in prometheus["networks"]["default"]["aliases"]


@pytest.mark.parametrize("name", ["grafana", "host-grafana"])
def test_grafana_provisioning_matches_compose(name: str) -> None:
    grafana = compose()["services"][name]
    mounts = {target: source for source, target in _mounts(grafana)}
    assert mounts["/etc/grafana/provisioning"] == "./dashboards/provisioning"
    providers = [
        provider
        for path in (PROVISIONING / "dashboards").glob("*.yml")
        for provider in load_yaml(path)["providers"]
    ]
    assert providers
    for provider in providers:
        container_path = provider["options"]["path"]
        assert container_path in mounts, f"provider path {container_path} is not mounted"
        assert list((REPO / mounts[container_path]).glob("*.json")), "no dashboard to load"
    home = PurePosixPath(grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"])
    assert (REPO / mounts[str(home.parent)] / home.name).is_file()
    datasources = provisioned_datasources()
    services = compose()["services"]
    # The Prometheus of the same profile (the stack's, or the monitoring role's by alias).
    profile = grafana.get("profiles")
    names = {n: n for n, s in services.items() if s.get("profiles") == profile}
    for n, s in services.items():
        if s.get("profiles") == profile:
            for alias in ((s.get("networks") or {}).get("default") or {}).get("aliases", []):
                names[alias] = n
    for source in datasources.values():
        host = re.match(r"https?://([^:/]+)", source["url"])
        assert host is not None and host.group(1) in names, (name, source["url"])
        target = services[names[host.group(1)]]
        assert str(target["image"]).startswith("prom/prometheus"), (name, source["url"])
        assert set(grafana["depends_on"]) == {names[host.group(1)]}


# --- dashboards ----------------------------------------------------------------------------


def provisioned_datasources() -> dict[str, dict[str, Any]]:
    out = {}
    for path in (PROVISIONING / "datasources").glob("*.yml"):
        for source in load_yaml(path)["datasources"]:
            out[source["uid"]] = source
    return out


def _datasource_uids(node: Any) -> list[str]:
    uids: list[str] = []
    if isinstance(node, dict):
        source = node.get("datasource")
        if isinstance(source, dict) and "uid" in source:
            uids.append(source["uid"])
        elif isinstance(source, str):
            uids.append(source)
        for value in node.values():
            uids += _datasource_uids(value)
    elif isinstance(node, list):
        for value in node:
            uids += _datasource_uids(value)
    return uids


def _queries(node: Any) -> list[str]:
    if isinstance(node, dict):
        own = [node["expr"]] if isinstance(node.get("expr"), str) else []
        return own + [q for v in node.values() for q in _queries(v)]
    if isinstance(node, list):
        return [q for v in node for q in _queries(v)]
    return []


def test_no_panel_divides_by_a_count_that_may_be_zero() -> None:
    """A league with no planned total (an open league, or before its first round) has
    ``arena_tournament_matches`` 0: a done/planned panel must show nothing, not +Inf."""
    divisions = 0
    for name, board in dashboards().items():
        for expr in _queries(board):
            for denominator in re.findall(r"/\s*(\(.*)", expr):
                if "arena_tournament_matches{" in denominator:
                    divisions += 1
                    assert re.match(r"\(max by \(tournament\) \(arena_tournament_matches"
                                    r"\{[^}]*\}\) > 0\)", denominator), (name, expr)
    assert divisions >= 1


def test_expected_dashboards_exist() -> None:
    uids = {d["uid"] for d in dashboards().values()}
    assert uids == {"arena-overview", "arena-bots", "arena-tournaments", "arena-workers"}


@pytest.mark.parametrize("name", sorted(p.name for p in DASHBOARD_DIR.glob("*.json")))
def test_dashboard_is_well_formed(name: str) -> None:
    board = dashboards()[name]
    assert "__inputs" not in board and "__requires" not in board
    assert board["title"] and board["uid"] and board["panels"]
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids)), "panel ids repeat"
    for panel in board["panels"]:
        assert panel["targets"], f"panel {panel['title']} has no query"
        assert panel["datasource"]["uid"] == "prometheus"
        ref_ids = [target["refId"] for target in panel["targets"]]
        assert len(ref_ids) == len(set(ref_ids))
        for target in panel["targets"]:
            assert target["expr"].strip()
        grid = panel["gridPos"]
        assert grid["x"] >= 0 and grid["x"] + grid["w"] <= 24
    provisioned = set(provisioned_datasources())
    used = set(_datasource_uids(board))
    assert used and used <= provisioned, f"unprovisioned datasources {used - provisioned}"


def test_dashboard_panels_do_not_overlap() -> None:
    for name, board in dashboards().items():
        cells: set[tuple[int, int]] = set()
        for panel in board["panels"]:
            g = panel["gridPos"]
            mine = {
                (x, y)
                for x in range(g["x"], g["x"] + g["w"])
                for y in range(g["y"], g["y"] + g["h"])
            }
            assert not cells & mine, f"{name}: {panel['title']} overlaps another panel"
            cells |= mine


def test_dashboard_json_is_generated_from_generate_py() -> None:
    sys.path.insert(0, str(DASHBOARD_DIR))
    try:
        import generate  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(DASHBOARD_DIR))
    rendered: dict[str, str] = generate.render()
    on_disk = {p.name: p.read_text() for p in DASHBOARD_DIR.glob("*.json")}
    assert rendered == on_disk, "run: python dashboards/generate.py"


def test_the_second_gateway_serves_the_same_pool_of_bots() -> None:
    """``--profile scale-out`` adds a gateway that shares the first one's bot registry,
    organiser token and routing Redis, on ports of its own (docs/scale-out.md)."""
    services = compose()["services"]
    first, second = services["gateway"], services["gateway-2"]
    assert second["profiles"] == ["scale-out"]
    assert _option(first["command"], "--db") == _option(second["command"], "--db")
    assert first["volumes"] == second["volumes"]
    for key in ("ARENA_ROUTING_URL", "ARENA_ORGANISER_TOKEN"):
        assert first["environment"][key] == second["environment"][key]
    assert second["environment"]["ARENA_ROUTING_URL"].startswith("redis://redis:")
    ports = {p.rsplit(":", 1)[-1] for s in (first, second) for p in s["ports"]}
    assert len(ports) == 4, "each gateway has its own gRPC and metrics ports"
    assert all(p.startswith("${ARENA_BIND:-127.0.0.1}:") for p in second["ports"])
    assert _option(second["command"], "--port") == "50052"
