"""deploy/ cannot run here, so every file is parsed and every command it runs is checked.

Commands in the YAML files are JSON-style lists (``command: ["srh", ...]``) so
they are checked even without PyYAML; the structural checks of the YAML
documents need PyYAML and are skipped without it.
"""

from __future__ import annotations

import configparser
import json
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from srh_workers.cli.worker import build_parser, worker_commands
from srh_workers.config import SETTINGS_ENV, WorkerSettings
from tests.workers.support import wait_until

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
YAML_FILES = sorted([*DEPLOY.glob("*.yml"), *DEPLOY.glob("**/*.yaml")])
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
WORKER_UNITS = [unit for unit in UNITS if "worker" in unit.name]
COMMAND_LINE = re.compile(r"^\s*(?:command|test):\s*(\[.*\])\s*$", re.MULTILINE)
ENV_LINE = re.compile(r"^\s+(SRH_[A-Z_]+):\s*\"([^\"]*)\"\s*$", re.MULTILINE)
SPECIFIERS = {"%i": "4", "%H": "host.example", "%%": "%"}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def yaml_commands() -> Iterator[tuple[str, list[str]]]:
    for path in YAML_FILES:
        for match in COMMAND_LINE.finditer(path.read_text()):
            yield f"{path.relative_to(DEPLOY)}: {match.group(1)}", json.loads(match.group(1))


def unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=True, delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # keys are case-sensitive
    parser.read_string(path.read_text(), source=str(path))
    return parser


def expand_specifiers(text: str) -> str:
    return re.sub(r"%[iH%]", lambda match: SPECIFIERS[match.group(0)], text)


@pytest.fixture(scope="module")
def celery_worker_flags() -> set[str]:
    """Every option ``celery worker --help`` lists (one subprocess for the module)."""
    result = subprocess.run([sys.executable, "-m", "celery", "worker", "--help"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", result.stdout))


def check_srh_command(argv: list[str], celery_flags: set[str]) -> None:
    """``srh worker|metrics ...`` parses, and a worker's Celery flags all exist."""
    assert argv[0] == "srh" or argv[0].endswith("/srh"), argv
    args = build_parser().parse_args(argv[1:])
    if args.command != "worker":
        assert args.command == "metrics"
        return
    for command in worker_commands(args.queues, WorkerSettings(), concurrency=args.concurrency,
                                   loglevel=args.loglevel, hostname=args.hostname,
                                   metrics_port=args.metrics_port):
        unknown = {part for part in command.argv if part.startswith("-")} - celery_flags - {"-m"}
        assert not unknown, f"celery worker has no {unknown} (from {argv})"


# --------------------------------------------------------------- commands
@pytest.mark.parametrize(("where", "argv"), list(yaml_commands()),
                         ids=[where for where, _ in yaml_commands()])
def test_yaml_commands_exist(where: str, argv: list[str], celery_worker_flags: set[str]) -> None:
    if argv[0] == "srh":
        check_srh_command(argv, celery_worker_flags)
    elif argv[0] == "celery":  # Flower, in the mher/flower image
        assert "flower" in argv and any(part.startswith("--broker=redis://") for part in argv)
    elif argv[0] == "redis-server":
        assert argv[1] == "/usr/local/etc/redis/redis.conf"
        assert "./redis.conf:/usr/local/etc/redis/redis.conf:ro" in (
            DEPLOY / "docker-compose.yml").read_text()
    else:
        assert argv[:2] == ["CMD", "redis-cli"], f"unchecked command in {where}"


def test_every_worker_file_starts_a_worker() -> None:
    commands = [argv for _, argv in yaml_commands() if argv[:2] == ["srh", "worker"]]
    queues = {argv[argv.index("--queues") + 1] for argv in commands}
    assert queues == {"tools", "branches"}
    assert len(commands) == 4  # compose x2, kubernetes x2


@pytest.mark.parametrize("path", UNITS, ids=[path.name for path in UNITS])
def test_systemd_units(path: Path, celery_worker_flags: set[str]) -> None:
    parsed = unit(path)
    assert set(parsed.sections()) == {"Unit", "Service", "Install"}
    service = parsed["Service"]
    assert service["Restart"] == "always"
    assert service["EnvironmentFile"] == "/etc/srh/srh.env"
    assert parsed["Install"]["WantedBy"] == "multi-user.target"
    argv = shlex.split(expand_specifiers(service["ExecStart"]))
    assert argv[0].startswith("/") and argv[0].endswith("/srh")
    check_srh_command(argv, celery_worker_flags)


@pytest.mark.parametrize("path", WORKER_UNITS, ids=[path.name for path in WORKER_UNITS])
def test_worker_units_stop_gracefully(path: Path) -> None:
    service = unit(path)["Service"]
    assert service["KillMode"] == "mixed" and service["KillSignal"] == "SIGTERM"
    kind = "tool" if "tools" in path.name else "branch"
    assert float(service["TimeoutStopSec"]) > WorkerSettings().limits(kind).hard
    assert set(service["RestartPreventExitStatus"].split()) == {"2", "78"}
    if kind == "tool":
        assert "OMP_NUM_THREADS=1" in service["Environment"].split()
        assert "--concurrency 4" in expand_specifiers(service["ExecStart"])


def test_env_example_is_valid_and_complete() -> None:
    lines = (DEPLOY / "systemd" / "srh.env.example").read_text().splitlines()
    environ = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    WorkerSettings.from_env(environ).check()
    assert set(environ) <= set(SETTINGS_ENV.values())


@pytest.mark.parametrize("name", ["docker-compose.yml", "kubernetes/configmap.yaml",
                                  "kubernetes-extras/secret.example.yaml"])
def test_yaml_settings_are_valid(name: str) -> None:
    environ = dict(ENV_LINE.findall((DEPLOY / name).read_text()))
    assert environ, f"no SRH_* settings found in {name}"
    assert set(environ) - {"SRH_REDIS_ADDRESS"} <= set(SETTINGS_ENV.values())
    WorkerSettings.from_env(environ).check()


# ------------------------------------------------------------------ image
def dockerfile_instructions() -> list[tuple[str, str]]:
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip())
            for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_image_entrypoint_resolves(celery_worker_flags: set[str]) -> None:
    instructions = dict(dockerfile_instructions())
    entrypoint = json.loads(instructions["ENTRYPOINT"])
    assert entrypoint == ["srh"] and "srh" in PYPROJECT["project"]["scripts"]
    check_srh_command([*entrypoint, *json.loads(instructions["CMD"])], celery_worker_flags)
    assert "OMP_NUM_THREADS=1" in instructions["ENV"].split()


def test_image_copies_existing_paths_and_installs_existing_extras() -> None:
    for instruction, value in dockerfile_instructions():
        if instruction == "COPY":
            for source in value.split()[:-1]:
                assert (ROOT / source).exists(), f"COPY {source}: no such path in the repo"
        if instruction == "RUN" and "pip install" in value:
            extras = re.findall(r"\.\[([\w,]+)\]", value)
            assert extras, value
            for extra in extras[0].split(","):
                assert extra in PYPROJECT["project"]["optional-dependencies"], extra


def test_srh_cli_has_the_worker_command() -> None:
    from srh_core.cli import build_parser as srh_parser

    parser = srh_parser()
    subcommands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    if "worker" not in subcommands:
        pytest.skip("the srh.commands plugin does not register `worker` yet "
                    "(srh_workers' plugin must call add_worker_command/add_metrics_command)")
    args = parser.parse_args(["worker", "--queues", "tools", "--dry-run"])
    assert args.handler.__name__ == "run_worker"


# ---------------------------------------------------------------- redis
def redis_directives() -> dict[str, str]:
    pairs = (line.split(None, 1) for line in (DEPLOY / "redis.conf").read_text().splitlines()
             if line.strip() and not line.startswith("#"))
    return {key: value for key, value in pairs}


def test_redis_conf_binds_loopback_in_protected_mode_without_a_password_in_the_file() -> None:
    directives = redis_directives()
    assert directives["bind"].split() == ["127.0.0.1", "-::1"]
    assert directives["protected-mode"] == "yes"
    assert "requirepass" not in directives  # it comes from a secret


def test_compose_protects_redis_and_flower(yaml_module) -> None:  # type: ignore[no-untyped-def]
    compose = yaml_module.safe_load((DEPLOY / "docker-compose.yml").read_text())
    services = compose["services"]
    password = "${SRH_REDIS_PASSWORD:?missing in .env}"
    redis_service = services["redis"]
    assert "ports" not in redis_service  # only the compose network reaches it
    command = redis_service["command"]
    assert command[command.index("--requirepass") + 1] == password
    assert redis_service["environment"]["REDISCLI_AUTH"] == password
    for name in ("branches", "tools", "metrics"):
        environment = services[name]["environment"]
        for variable in ("SRH_BROKER_URL", "SRH_RESULT_BACKEND", "SRH_REDIS_URL"):
            assert environment[variable].startswith(f"redis://:{password}@redis:"), variable
    flower = services["flower"]
    assert flower["environment"]["FLOWER_BASIC_AUTH"] == "${FLOWER_BASIC_AUTH:?missing in .env}"
    assert any(part.startswith(f"--broker=redis://:{password}@") for part in flower["command"])
    published = [port for service in services.values() for port in service.get("ports", [])]
    assert published and all(port.startswith("127.0.0.1:") for port in published)
    assert "deploy/.env" in (ROOT / ".gitignore").read_text().split()


def test_redis_conf_persists_and_never_evicts() -> None:
    directives = redis_directives()
    assert directives["maxmemory-policy"] == "noeviction"
    assert directives["appendonly"] == "yes"
    assert directives["appendfsync"] == "everysec"


def answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except (redis.ConnectionError, redis.TimeoutError, redis.exceptions.BusyLoadingError):
        return False


@pytest.mark.integration
def test_redis_conf_loads_in_redis_server(tmp_path: Path) -> None:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not on PATH")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # the file first, then overrides that keep the server private
    process = subprocess.Popen(
        [binary, str(DEPLOY / "redis.conf"), "--port", str(port), "--bind", "127.0.0.1",
         "--dir", str(tmp_path), "--logfile", "redis.log", "--daemonize", "no",
         "--maxmemory", "64mb"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis(port=port, socket_connect_timeout=0.5, socket_timeout=2)
    try:
        wait_until(lambda: process.poll() is not None or answers(client), 10,
                   "redis-server to load deploy/redis.conf")
        assert process.poll() is None, (tmp_path / "redis.log").read_text()
        config = client.config_get("*")
        assert config["maxmemory-policy"] == "noeviction"
        assert config["appendonly"] == "yes" and config["appendfsync"] == "everysec"
    finally:
        client.close()
        process.terminate()
        process.wait(timeout=10)


# ------------------------------------------------------- YAML structure
@pytest.fixture(scope="module")
def yaml_module():  # type: ignore[no-untyped-def]
    return pytest.importorskip("yaml", reason="PyYAML is not installed: the YAML structure "
                                              "checks need it (commands are checked without)")


def test_every_yaml_file_parses(yaml_module) -> None:  # type: ignore[no-untyped-def]
    for path in YAML_FILES:
        documents = [doc for doc in yaml_module.safe_load_all(path.read_text()) if doc]
        assert documents, path
        if "kubernetes" in str(path.relative_to(DEPLOY)):
            for doc in documents:
                assert {"apiVersion", "kind", "metadata"} <= set(doc), path
                assert "namespace" not in doc["metadata"], f"{path} must be namespace-less"


def test_compose_services(yaml_module) -> None:  # type: ignore[no-untyped-def]
    compose = yaml_module.safe_load((DEPLOY / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) >= {"redis", "branches", "tools", "flower"}
    assert "container_name" not in services["tools"] and "ports" not in services["tools"]
    assert services["tools"]["build"]["dockerfile"] == "deploy/Dockerfile"
    assert (DEPLOY / services["tools"]["build"]["context"] / "deploy" / "Dockerfile").exists()


def kubernetes_documents(yaml_module, directory: Path) -> dict[tuple[str, str], dict]:  # type: ignore[no-untyped-def]
    documents = {}
    for path in sorted(directory.glob("**/*.yaml")):
        for doc in yaml_module.safe_load_all(path.read_text()):
            documents[(doc["kind"], doc["metadata"]["name"])] = doc
    return documents


def test_kubernetes_workers_and_scaling(yaml_module) -> None:  # type: ignore[no-untyped-def]
    documents = kubernetes_documents(yaml_module, DEPLOY / "kubernetes")
    tools = documents[("Deployment", "srh-worker-tools")]
    assert ("Deployment", "srh-worker-branches") in documents
    spec = tools["spec"]["template"]["spec"]
    assert spec["terminationGracePeriodSeconds"] > WorkerSettings().tool_hard_limit
    container = spec["containers"][0]
    concurrency = container["command"][container["command"].index("--concurrency") + 1]
    assert container["resources"]["requests"]["cpu"] == concurrency
    mounts = {mount["mountPath"] for mount in container["volumeMounts"]}
    artifacts = documents[("ConfigMap", "srh-config")]["data"]["SRH_ARTIFACTS"]
    assert f"{artifacts}/runs" in mounts  # the artifact root's runs are the shared volume
    extras = kubernetes_documents(yaml_module, DEPLOY / "kubernetes-extras")
    scaled = extras[("ScaledObject", "srh-worker-tools")]
    assert scaled["spec"]["scaleTargetRef"]["name"] == "srh-worker-tools"
    trigger = scaled["spec"]["triggers"][0]
    assert trigger["type"] == "redis" and trigger["metadata"]["listName"] == "tools"
    hpa = extras[("HorizontalPodAutoscaler", "srh-worker-tools")]
    assert hpa["spec"]["scaleTargetRef"]["name"] == "srh-worker-tools"


def test_applying_the_kubernetes_directory_is_safe(yaml_module) -> None:  # type: ignore[no-untyped-def]
    """``kubectl apply -f deploy/kubernetes/`` (the documented command) must not overwrite the
    real Secret with the example, nor combine the two autoscalers of one Deployment."""
    kinds = {kind for kind, _ in kubernetes_documents(yaml_module, DEPLOY / "kubernetes")}
    assert not kinds & {"Secret", "ScaledObject", "HorizontalPodAutoscaler"}, kinds
    assert not list((DEPLOY / "kubernetes").glob("*/"))  # nothing nested that -R would add
    extras = DEPLOY / "kubernetes-extras"
    for directory in (extras / "autoscaling-hpa", extras / "autoscaling-keda"):
        found = kubernetes_documents(yaml_module, directory)
        assert len(found) == 1, directory  # one autoscaler per directory: apply one of them


def test_readme_documents_every_setting() -> None:
    text = (DEPLOY / "README.md").read_text()
    missing = [name for name in SETTINGS_ENV.values() if name not in text]
    assert not missing
    for phrase in ("noeviction", "appendonly", "consumer_timeout", "visibility_timeout",
                   "task_acks_late", "task_reject_on_worker_lost", "worker_prefetch_multiplier"):
        assert phrase in text


def test_kubernetes_manifests_match_the_api_schemas(yaml_module) -> None:  # type: ignore[no-untyped-def]
    """Every manifest against the Kubernetes OpenAPI schemas (kubernetes-validate, strict:
    an unknown or misspelled field fails); KEDA's ScaledObject is a CRD without a bundled
    schema, checked by test_kubernetes_workers_and_scaling."""
    import kubernetes_validate  # in the dev extra: CI always runs this check
    version = "1.30.0"
    checked = 0
    for path in sorted(DEPLOY.glob("kubernetes*/**/*.yaml")):
        for doc in yaml_module.safe_load_all(path.read_text()):
            if doc["kind"] == "ScaledObject":
                continue
            kubernetes_validate.validate(doc, version, strict=True)
            checked += 1
    assert checked >= 8
    tools = yaml_module.safe_load((DEPLOY / "kubernetes" / "worker-tools.yaml").read_text())
    tools["spec"]["template"]["spec"]["containers"][0]["comand"] = ["srh"]  # a typo fails
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(tools, version, strict=True)
