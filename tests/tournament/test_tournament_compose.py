"""The compose stack, checked without a container engine: the writers of results share one
store, secrets come from an env file with no working defaults, ports stay on loopback.

Interpolation is done here the way Compose does it (``${VAR:?message}`` refuses to start,
``${VAR:-default}`` falls back, ``$$`` is a dollar), so the checks see what would run.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.yml"
ENV_EXAMPLE = REPO / ".env.example"
SECRETS = ("ARENA_ORGANISER_TOKEN", "POSTGRES_PASSWORD", "GRAFANA_ADMIN_PASSWORD")
#: Services that write match results themselves.
WRITERS = ("worker", "tournament")

_VAR = re.compile(r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:\?|:-)(?P<arg>[^}]*))?\}")


class Refused(Exception):
    """What ``docker compose`` does with a required variable left unset or empty."""


def interpolate(text: str, env: dict[str, str]) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name, op, arg = m.group("name"), m.group("op"), m.group("arg")
        value = env.get(name, "")
        if op == ":?" and not value:
            raise Refused(f"{name}: {arg}")
        if op == ":-" and not value:
            return arg
        return value

    return _VAR.sub(one, text)


def load(env: dict[str, str]) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(interpolate(COMPOSE.read_text(), env))
    return data


def example_env() -> dict[str, str]:
    out = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


FILLED = {
    "ARENA_ORGANISER_TOKEN": "t0ken-for-the-test",
    "POSTGRES_PASSWORD": "pw-for-the-test",
    "GRAFANA_ADMIN_PASSWORD": "grafana-for-the-test",
}


def test_compose_refuses_to_start_without_each_secret() -> None:
    text = COMPOSE.read_text()
    example = example_env()
    for name in SECRETS:
        assert f"${{{name}:?" in text, f"{name} must be required (${{{name}:?...}})"
        assert f"${{{name}:-" not in text, f"{name} must have no default"
        assert name in example and example[name] == "", f".env.example must leave {name} empty"
        with pytest.raises(Refused, match=name):
            load({k: v for k, v in FILLED.items() if k != name})
    # The example as shipped does not start either: every secret must be filled in.
    with pytest.raises(Refused):
        load(example)
    # Every required variable is explained in the example.
    for m in _VAR.finditer(text):
        if m.group("op") == ":?":
            assert m.group("name") in example, m.group("name")
    assert ".env" in (REPO / ".gitignore").read_text().split()


def test_published_ports_are_on_loopback_unless_asked() -> None:
    services = load(FILLED)["services"]
    published = 0
    for name, service in services.items():
        for port in service.get("ports") or []:
            published += 1
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} beyond loopback"
    assert published >= 4
    wide = load({**FILLED, "ARENA_BIND": "0.0.0.0"})["services"]
    assert str(wide["gateway"]["ports"][0]).startswith("0.0.0.0:")
    raw = yaml.safe_load(COMPOSE.read_text())["services"]
    for name, service in raw.items():
        for port in service.get("ports") or []:
            assert str(port).startswith("${ARENA_BIND:-127.0.0.1}:"), (name, port)


def _db_url(service: dict[str, Any]) -> str | None:
    command = [str(a) for a in service.get("command") or []]
    if "--db" in command:
        return command[command.index("--db") + 1]
    return None


def test_every_writer_of_results_reaches_the_same_postgresql_store() -> None:
    data = load(FILLED)
    services = data["services"]
    postgres = services["postgres"]
    env = postgres["environment"]
    # The scheduler's store: the one whose URL it hands to the workers with every task.
    url = _db_url(services["tournament"])
    assert url is not None
    parts = urlsplit(url)
    assert parts.scheme == "postgresql"
    assert parts.hostname == "postgres" and (parts.port or 5432) == 5432
    assert parts.username == env["POSTGRES_USER"]
    assert parts.password == env["POSTGRES_PASSWORD"] == FILLED["POSTGRES_PASSWORD"]
    assert parts.path.lstrip("/") == env["POSTGRES_DB"]
    for name in WRITERS:
        service = services[name]
        # The same store in the environment of every writer (arena leaderboard uses it too).
        assert service["environment"]["ARENA_DB_URL"] == url, name
        assert service["depends_on"]["postgres"]["condition"] == "service_healthy", name
        # No writer keeps results in a file of its own that the others cannot see.
        command = " ".join(str(a) for a in service.get("command") or [])
        assert "sqlite" not in command, name
    # The store's data survives a restart of its container.
    mounts = {str(v).split(":")[1]: str(v).split(":")[0] for v in postgres["volumes"]}
    volume = mounts["/var/lib/postgresql/data"]
    assert volume in data["volumes"]
    assert "healthcheck" in postgres
    # The results of the demo live in PostgreSQL only: no SQLite volume is left behind.
    for name, service in services.items():
        for volume in service.get("volumes") or []:
            assert "sqlite" not in str(volume), name


def test_arena_image_has_the_store_driver() -> None:
    from arena.tournament.store import parse_db_url

    url = _db_url(load(FILLED)["services"]["tournament"])
    assert url is not None
    assert parse_db_url(url)[0] == "postgresql"
    pyproject = (REPO / "pyproject.toml").read_text()
    assert "psycopg[binary]" in pyproject  # installed by the image's `pip install .`


def config_problems(data: dict[str, Any]) -> list[str]:
    """What ``docker compose config`` refuses in an interpolated file, read without a
    container engine: what the Compose Specification's schema forbids (the schema
    check-jsonschema ships, ``vendor.compose-spec``) and every name or path the file refers to
    that is not there (a service a ``depends_on`` waits for, a named volume or network, a
    build context, Dockerfile or bind-mounted file of this repository)."""
    schema = json.loads(
        resources.files("check_jsonschema.builtin_schemas.vendor")
        .joinpath("compose-spec.json")
        .read_text(encoding="utf-8")
    )
    validator = jsonschema.validators.validator_for(schema)(schema)
    problems = [f"{e.json_path}: {e.message}" for e in validator.iter_errors(data)]
    services: dict[str, Any] = data.get("services") or {}
    declared = {kind: set(data.get(kind) or {}) for kind in ("volumes", "networks")}
    declared["networks"].add("default")
    for name, service in services.items():
        for needed in service.get("depends_on") or []:
            if needed not in services:
                problems.append(f"{name}: depends on undefined service {needed}")
        for network in service.get("networks") or []:
            if network not in declared["networks"]:
                problems.append(f"{name}: undefined network {network}")
        for mount in service.get("volumes") or []:
            if isinstance(mount, dict):  # the long form names its source
                source = str(mount.get("source", ""))
            else:  # SOURCE:TARGET[:MODE]; a bare TARGET is an anonymous volume
                source = str(mount).split(":")[0] if ":" in str(mount) else ""
            if source.startswith((".", "/")):
                if source.startswith(".") and not (REPO / source).exists():
                    problems.append(f"{name}: no {source} to mount")
            elif source and source not in declared["volumes"]:
                problems.append(f"{name}: undefined volume {source}")
        build = service.get("build")
        if build:
            context = REPO / (build if isinstance(build, str) else build.get("context", "."))
            dockerfile = "Dockerfile" if isinstance(build, str) else build.get(
                "dockerfile", "Dockerfile")
            if not (context / dockerfile).is_file():
                problems.append(f"{name}: no {dockerfile} in {context.relative_to(REPO)}")
    return problems


def test_compose_config_as_the_compose_specification_reads_it(tmp_path: Path) -> None:
    """The file ``docker compose config`` would accept once the secrets are set, and refuse
    without them. Where ``docker compose`` is installed it is asked too; the schema and
    reference checks run everywhere, and a broken copy shows they can fail."""
    data = load(FILLED)
    assert config_problems(data) == []
    with pytest.raises(Refused, match="POSTGRES_PASSWORD"):
        load({})
    broken = copy.deepcopy(data)
    broken["services"]["worker"]["restart_policy"] = "always"
    broken["services"]["worker"]["depends_on"] = {"redsi": {"condition": "service_started"}}
    broken["services"]["gateway"]["volumes"] = ["gatway-data:/data", "./no-such-dir:/x"]
    broken["services"]["gateway"]["ports"] = [{"target": 50051, "publsihed": "50051"}]
    found = "\n".join(config_problems(broken))
    for expected in ("restart_policy", "redsi", "gatway-data", "./no-such-dir",
                     "$.services.gateway.ports[0]:"):
        assert expected in found, (expected, found)

    docker = shutil.which("docker")
    probe = (subprocess.run([docker, "compose", "version"], capture_output=True, timeout=30)
             if docker else None)
    if probe is None or probe.returncode != 0:
        return
    env_file = tmp_path / ".env"
    env_file.write_text("".join(f"{k}={v}\n" for k, v in FILLED.items()))
    ok = subprocess.run(
        [docker, "compose", "-f", str(COMPOSE), "--env-file", str(env_file), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    empty = tmp_path / "empty.env"
    empty.write_text("")
    refused = subprocess.run(
        [docker, "compose", "-f", str(COMPOSE), "--env-file", str(empty), "config", "-q"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "POSTGRES_PASSWORD" in refused.stderr + refused.stdout


ROLES = {"data-redis": "data", "data-postgres": "data", "host-gateway": "gateway",
         "host-worker": "worker", "host-organiser": "organiser", "host-web": "web"}


def test_each_role_of_a_multi_host_deployment_has_its_profile_and_tls() -> None:
    """docs/deploy.md with Docker Compose: one profile per role, each role reaching the
    data host by name, over TLS verified against deploy/tls/ca.crt, and none waiting for
    a service of the one-machine stack (which runs on no machine of theirs)."""
    env = {**FILLED, "REDIS_PASSWORD": "redis-pw", "ARENA_DATA_HOST": "db.example"}
    services = load(env)["services"]
    for name, profile in ROLES.items():
        service = services[name]
        assert service["profiles"] == [profile], name
        assert "depends_on" not in service, name
        assert "./deploy/tls:/tls:ro" in service["volumes"], name
    assert (REPO / "deploy" / "tls" / "README.md").is_file()
    for name in ("host-gateway", "host-worker", "host-organiser", "host-web"):
        environment = services[name]["environment"]
        for key in ("ARENA_BROKER_URL", "ARENA_ROUTING_URL"):
            url = urlsplit(environment[key])
            assert (url.scheme, url.hostname, url.port, url.password) == (
                "rediss", "db.example", 6379, "redis-pw"), (name, key)
            assert "ssl_cert_reqs=required" in url.query and "/tls/ca.crt" in url.query
        for key in ("ARENA_DB_URL", "ARENA_GATEWAY_DB"):
            url = urlsplit(environment[key])
            assert (url.hostname, url.password) == ("db.example", FILLED["POSTGRES_PASSWORD"])
            assert "sslmode=verify-full" in url.query and "sslrootcert=/tls/ca.crt" in url.query
        assert environment["ARENA_TLS_CA"] == "/tls/ca.crt"
    assert "schema=arena_bots" in services["host-gateway"]["environment"]["ARENA_GATEWAY_DB"]
    gateway = " ".join(services["host-gateway"]["command"])
    assert "--tls-cert /tls/server.crt --tls-key /tls/server.key" in gateway
    redis = " ".join(services["data-redis"]["command"])
    assert "--port 0 --tls-port 6379" in redis and '--requirepass "$REDIS_PASSWORD"' in redis
    postgres = " ".join(services["data-postgres"]["entrypoint"])
    assert "ssl=on" in postgres and "hostssl all all all scram-sha-256" in postgres
    # A role started without the Redis password says so and stops, rather than run open.
    for name in ("data-redis", "host-gateway", "host-worker", "host-web"):
        command = " ".join(services[name]["command"])
        assert 'test -n "$REDIS_PASSWORD" || { echo "set REDIS_PASSWORD in .env"' in command
    example = example_env()
    assert "REDIS_PASSWORD" in ENV_EXAMPLE.read_text() and "REDIS_PASSWORD" not in example


#: Profiles of the one-machine stack's extras, not roles of a multi-host deployment.
STACK_PROFILES = {"demo", "scale-out"}
_BACKTICKED = re.compile(r"`([^`]+)`")


def documented_roles() -> dict[str, dict[str, set[str]]]:
    """The table of docs/deploy.md's compose section: for each profile, its services, the
    ports it publishes, what it reads from .env and what it needs in deploy/tls."""
    text = (REPO / "docs" / "deploy.md").read_text()
    section = text.split("## With Docker Compose", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    roles: dict[str, dict[str, set[str]]] = {}
    for row in rows:
        cells = [c.strip() for c in row.strip("|").split("|")]
        profile, _on, services, publishes, env, tls = cells
        roles[_BACKTICKED.findall(profile)[0]] = {
            "services": set(_BACKTICKED.findall(services)),
            "publishes": set(re.findall(r"\d+", publishes)),
            "env": set(_BACKTICKED.findall(env)),
            "tls": set(_BACKTICKED.findall(tls)),
        }
    assert len(roles) >= 6, rows
    return roles


def _variables(node: Any) -> set[str]:
    """The .env variables a service's definition interpolates (``$$`` is the container's)."""
    if isinstance(node, dict):
        return set().union(*(_variables(v) for v in node.values()), set())
    if isinstance(node, list):
        return set().union(*(_variables(v) for v in node), set())
    return {m.group("name") for m in _VAR.finditer(str(node)) if m.group("name")}


def _tls_files(node: Any) -> set[str]:
    """The files of deploy/tls (mounted at /tls) a service's definition names."""
    if isinstance(node, dict):
        return set().union(*(_tls_files(v) for v in node.values()), set())
    if isinstance(node, list):
        return set().union(*(_tls_files(v) for v in node), set())
    return set(re.findall(r"/tls/([\w.-]+\.(?:crt|key))", str(node)))


def test_each_compose_role_is_what_the_deployment_guide_says() -> None:
    """docs/deploy.md's table of roles is the compose file's: each profile has the
    services it lists and no other, publishes those ports, reads those variables from
    .env and those files from deploy/tls; and a role waits for no service of another
    role, which runs on another machine."""
    roles = documented_roles()
    raw = yaml.safe_load(COMPOSE.read_text())["services"]  # before interpolation
    profiles: dict[str, set[str]] = {}
    for name, service in raw.items():
        for profile in service.get("profiles") or []:
            profiles.setdefault(profile, set()).add(name)
    assert set(profiles) - STACK_PROFILES == set(roles)
    env = {**FILLED, "REDIS_PASSWORD": "redis-pw", "ARENA_DATA_HOST": "db.example"}
    services = load(env)["services"]
    for profile, role in roles.items():
        assert profiles[profile] == role["services"], profile
        published: set[str] = set()
        variables: set[str] = set()
        tls: set[str] = set()
        for name in role["services"]:
            assert raw[name]["profiles"] == [profile], name
            # A role starts on its machine alone: what it waits for is of its own profile.
            assert set(raw[name].get("depends_on") or {}) <= role["services"], name
            for port in services[name].get("ports") or []:
                bind, outside, inside = str(port).split(":")
                assert bind == "127.0.0.1" and outside == inside, (name, port)
                published.add(outside)
            variables |= _variables(raw[name]) - {"ARENA_BIND"}
            tls |= _tls_files(raw[name])
            if tls:
                assert "./deploy/tls:/tls:ro" in services[name]["volumes"], name
        assert published == role["publishes"], profile
        assert variables == role["env"], profile
        assert tls == role["tls"], profile
        # Every variable it reads is explained in the example .env.
        example = ENV_EXAMPLE.read_text()
        assert {v for v in variables if v not in example} == set(), profile


def test_the_web_role_serves_the_store_live_matches_and_hosted_pages_over_tls() -> None:
    services = load({**FILLED, "REDIS_PASSWORD": "redis-pw"})["services"]
    web = services["host-web"]
    command = " ".join(web["command"])
    assert 'exec arena web --db "$ARENA_DB_URL" --host 0.0.0.0 --port 8000' in command
    environment = web["environment"]
    # --routing and the gateway's TLS come from the environment (arena web's defaults).
    assert environment["ARENA_ROUTING_URL"].startswith("rediss://")
    assert environment["ARENA_GATEWAY"] == "gw1:50051"
    assert environment["ARENA_TLS_CA"] == "/tls/ca.crt"
    assert "8000/healthz" in " ".join(web["healthcheck"]["test"])
    named = load({**FILLED, "REDIS_PASSWORD": "x", "ARENA_GATEWAY": "gw2:50051"})["services"]
    assert named["host-web"]["environment"]["ARENA_GATEWAY"] == "gw2:50051"
