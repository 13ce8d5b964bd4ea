"""The run commands of the cluster: ``srh status``, ``result``, ``cancel``, ``kick`` and the
``celery`` backend of ``srh run`` (with ``--detach``) and of ``srh sweep``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from srh_core.errors import ConfigurationError, SRHarnessError
from srh_workers.cli.connections import checked, connections, redis_of_runs

if TYPE_CHECKING:  # each handler imports what it uses: ``srh --help`` starts at once
    from srh_core.types import SearchResult


def celery_sweep_backend(args: argparse.Namespace) -> Any:
    """``srh sweep --backend celery``: cells as distributed runs."""
    from srh_workers.flow.tasks import sender
    from srh_workers.sweeps import CelerySweepBackend

    client, app = connections()
    return CelerySweepBackend(checked(client), sender(app))


def run_celery(args: argparse.Namespace) -> int:
    """``srh run --backend celery``: submit, then follow until the result (or detach)."""
    from srh_core.cli.commands import (
        agent_class_from_args,
        load_run_data,
        print_result,
        report_judgement,
    )
    from srh_workers.flow.tasks import sender
    from srh_workers.submit import submit_run, wait_for_result

    client, app = connections()
    checked(client)
    settings = _cluster_settings(args)
    data = load_run_data(args)
    from srh_core.cli.checks import check_run_data

    check_run_data(settings, data)  # the model endpoint is the workers' to check
    api_key = own_key(settings) if getattr(args, "own_key", False) else None
    if getattr(args, "interactive", False):
        spec = _submit_interactive(args, client, sender(app), settings, data, api_key)
    else:
        spec = submit_run(client, sender(app), settings, data.X, data.y, data.description,
                          agent_class=agent_class_from_args(args), api_key=api_key)
    print(f"Submitted run {spec.run_id}", file=sys.stderr)
    if getattr(args, "detach", False):
        print(spec.run_id)
        return 0
    result = wait_for_result(client, spec.run_id, on_poll=_progress(settings.max_nodes),
                             on_outage=_outage_notice())
    report_judgement(data, result, None)
    return print_result(result, settings, args.json)


def _outage_notice() -> Any:
    """One stderr line when Redis goes away, not one per poll."""
    told = {"down": False}

    def notice(error: BaseException) -> None:
        if not told["down"]:
            print(f"Redis is unreachable ({error}); the run goes on in the workers, still "
                  "following...", file=sys.stderr)
            told["down"] = True

    return notice


def own_key(settings: Any) -> str:
    """``--own-key``: the run's provider key, read from the submitter's environment.

    Raises:
        ConfigurationError: The provider takes no key, or its key variable is unset here.
    """
    import os

    from srh_core.api import OpenAIAPI
    from srh_core.api.base import PROVIDERS

    api_cls = PROVIDERS.get(settings.llm_provider)
    if not issubclass(api_cls, OpenAIAPI):
        raise ConfigurationError(f"--own-key needs a provider that takes an API key; "
                                 f"{settings.llm_provider!r} takes none.", setting="own_key")
    names = api_cls.preset.api_key_envs
    key = next((os.environ[name] for name in names if os.environ.get(name)), None)
    if key is None:
        raise ConfigurationError(f"--own-key reads the {settings.llm_provider} key from "
                                 f"{names[0]}, which is not set here.", setting=names[0])
    return key


def _submit_interactive(args: argparse.Namespace, client: Any, send: Any, settings: Any,
                        data: Any, api_key: str | None = None) -> Any:
    """``--interactive``: the run's controls in Redis, then the run (SRAgentInteractive)."""
    from srh_core.interactive.cli import interactive_options
    from srh_workers.control.submit import submit_interactive

    agent_class = None
    if getattr(args, "agent_class", None):
        from srh_core.cli.commands import agent_class_from_args

        agent_class = agent_class_from_args(args)
    spec = submit_interactive(client, send, settings, data.X, data.y, data.description,
                              agent_class=agent_class, options=interactive_options(args),
                              api_key=api_key)
    print(f"Steer it with: srh pause|resume|message|next-branch|next-restart {spec.run_id}",
          file=sys.stderr)
    return spec


def _cluster_settings(args: argparse.Namespace) -> Any:
    from srh_core.cli.commands import settings_from_args

    settings = settings_from_args(args)
    if args.out is None:  # the run directory is on the finalizing worker's disk
        settings = settings.replace(save_path=None)
    return settings


def _progress(total: int) -> Any:
    tty = sys.stderr.isatty()

    def show(status: dict[str, Any]) -> None:
        if tty:
            sys.stderr.write(f"\r\033[K[{status['status']}] {status['nodes']}/{total} responses, "
                             f"best: {(status['best_formula'] or '-')[:60]}")
            sys.stderr.flush()

    return show


def handle_status(args: argparse.Namespace) -> int:
    from srh_workers.store.cluster import ClusterIndex

    client = checked(redis_of_runs())  # before the run store's imports: no Redis fails at once
    if args.run_id:
        from srh_workers.submit import run_status

        report = run_status(client, args.run_id)
    else:
        report = {"runs": [_safe_status(client, run_id)
                           for run_id in ClusterIndex(client).recent_runs()],
                  **cluster_overview()}
    if args.json:
        print(json.dumps(report, default=str))
    else:
        print(_status_text(report))
    return 0


def _safe_status(client: Any, run_id: str) -> dict[str, Any]:
    from srh_workers.submit import run_status

    try:
        return run_status(client, run_id)
    except SRHarnessError as error:
        return {"run_id": run_id, "status": "unknown", "stop_reason": str(error)}


def cluster_overview(app: Any = None) -> dict[str, Any]:
    """Queue depths from the broker and the workers that answer a ping.

    The ping waits for as many replies as the broker has listeners on the workers'
    broadcast channel (none: no ping, and no Celery app is built), at most
    ``PING_SECONDS``.
    """
    from srh_workers.config import QUEUES, WorkerSettings
    from srh_workers.observability.metrics import queue_depths

    settings = WorkerSettings.from_env()
    try:
        depths, _ = queue_depths(settings.broker_url, QUEUES)
    except Exception as error:  # status must still print what it can
        depths = {"error": str(error)}
    listeners = broadcast_listeners(settings)
    replies: dict[str, Any] = {}
    if listeners != 0:
        if app is None:
            from srh_workers.app import get_app

            app = get_app()
        replies = app.control.inspect(timeout=PING_SECONDS, limit=listeners).ping() or {}
    return {"queues": depths, "workers": sorted(replies),
            "drained": sorted(set(drained_workers(settings)) & set(replies))}


#: How long ``srh status`` waits for the workers' ping replies.
PING_SECONDS = 1.0
#: The exchange of Celery's remote control (a worker listens to it while it runs).
BROADCAST_EXCHANGE = "celery.pidbox"


def broadcast_listeners(settings: Any) -> int | None:
    """How many clients listen to the workers' broadcast channel, an upper bound on the
    workers a ping can reach; None when it cannot be told (not a Redis broker, or an error).

    Counts the Redis server's pattern subscriptions (kombu subscribes to the fanout
    exchange by pattern) plus the exact-channel ones: other pattern subscribers make it
    larger, so a ping waits for more replies than come (until its timeout), never fewer.
    """
    from redis.exceptions import RedisError

    from srh_workers.store.client import redis_client

    if settings.broker_kind != "redis":
        return None
    try:
        client = redis_client(str(settings.broker_url))
        database = client.connection_pool.connection_kwargs.get("db", 0)
        channel = f"/{database}.{BROADCAST_EXCHANGE}"
        return int(client.pubsub_numpat()) + sum(
            int(count) for _, count in client.pubsub_numsub(channel))
    except RedisError:
        return None


def drained_workers(settings: Any) -> list[str]:
    """Node names ``srh worker drain`` drained (whether or not they still run)."""
    from redis.exceptions import RedisError

    from srh_workers.store.client import redis_client
    from srh_workers.store.cluster import ClusterIndex

    try:
        return ClusterIndex(redis_client(str(settings.redis_url))).drained_workers()
    except RedisError:
        return []


def _status_text(report: dict[str, Any]) -> str:
    if "runs" not in report:
        lines = [f"Run {report['run_id']}: {report['status']}"
                 + (f" ({report['stop_reason']})" if report.get("stop_reason") else ""),
                 f"  responses {report['nodes']}/{report['max_nodes']}, model requests "
                 f"{report['model_requests']}, {report['elapsed_seconds']:.0f}s since submit",
                 f"  best: {report['best_formula']}"]
        if report.get("totals"):
            from srh_core.cli.display import spend_line

            lines.append(f"  spend: {spend_line(report['totals'])}")
        lines += [f"  branch R{b['R']}-C{b['C']}: step {b['L']}, {b['status']}"
                  for b in report["branches"]]
        return "\n".join(lines)
    drained = set(report.get("drained") or ())
    workers = [f"{name} (drained)" if name in drained else name for name in report["workers"]]
    lines = [f"Workers: {', '.join(workers) or 'none answering'}",
             f"Queues: {report['queues']}", "Recent runs:"]
    lines += [f"  {r['run_id']}: {r['status']} {r.get('nodes', '')}/{r.get('max_nodes', '')} "
              f"{r.get('best_formula') or ''}" for r in report["runs"]]
    return "\n".join(lines)


def handle_result(args: argparse.Namespace) -> int:
    from srh_core.agent.settings import SearchSettings
    from srh_core.cli.commands import print_result
    from srh_workers.spec import load_spec
    from srh_workers.store import RedisRunStore
    from srh_workers.submit import run_result, wait_for_result

    client, _ = connections()
    checked(client)
    spec = load_spec(RedisRunStore(client, args.run_id, register=False))
    if args.wait is not None:
        result: SearchResult | None = wait_for_result(client, args.run_id, timeout=args.wait)
    else:
        result = run_result(client, args.run_id)
    if result is None:
        print(f"Run {args.run_id} is still running (srh status {args.run_id}).", file=sys.stderr)
        return 3
    return print_result(result, SearchSettings.build(**spec.settings), args.json)


def handle_cancel(args: argparse.Namespace) -> int:
    from srh_workers.flow.tasks import sender
    from srh_workers.submit import cancel_run

    client, app = connections()
    released = cancel_run(checked(client), args.run_id, sender(app))
    parked = f"; its {len(released)} parked step(s) were sent to end now" if released else ""
    print(f"Run {args.run_id} will stop at its branches' next steps{parked}.", file=sys.stderr)
    return 0


def handle_refresh_data(args: argparse.Namespace) -> int:
    """``srh refresh-data RUN_ID --data PATH``: the run's branches use new data from their next
    step (see srh_workers.submit.refresh_run_data)."""
    from pathlib import Path

    from srh_core.cli.tool_commands import context_from_data
    from srh_workers.submit import refresh_run_data

    client = checked(connections()[0])
    target = args.target
    if target is None and not Path(args.data).is_dir():  # a table: the run's own target
        from srh_workers.spec import load_spec
        from srh_workers.store import RedisRunStore

        target = load_spec(RedisRunStore(client, args.run_id, register=False)).target
    context = context_from_data(Path(args.data), target, {})
    revision = refresh_run_data(client, args.run_id, dict(context.data),
                                target=context.target, features=list(context.feature_names()),
                                variable_descriptions=context.variable_descriptions)
    print(f"Run {args.run_id} now uses data revision {revision}; each branch is told at its "
          "next step.", file=sys.stderr)
    return 0


def handle_kick(args: argparse.Namespace) -> int:
    from srh_workers.flow.tasks import sender
    from srh_workers.submit import kick_run

    client, app = connections()
    actions = kick_run(checked(client), sender(app), args.run_id)
    print(f"Re-sent {len(actions)} task(s) of run {args.run_id}: "
          f"{', '.join(a.task for a in actions) or 'none (the run has a result)'}",
          file=sys.stderr)
    return 0


def add_export_command(subparsers: Any) -> None:
    export = subparsers.add_parser(
        "export", help="(cluster) write a run's directory from Redis, then shrink its keys",
        description="Write a distributed run's directory (the files an embedded run leaves) "
                    "from Redis to DIR; a finished run's Redis keys then shrink to what "
                    "srh status and srh result read.")
    export.add_argument("run_id")
    export.add_argument("directory", metavar="DIR")
    export.add_argument("--partial", action="store_true",
                        help="export a run that is still running (no result; not compacted)")
    export.add_argument("--keep", action="store_true",
                        help="keep every Redis key of the run (no compaction)")
    export.set_defaults(handler=handle_export)


def handle_export(args: argparse.Namespace) -> int:
    from srh_workers.artifacts import export_run

    path = export_run(checked(redis_of_runs()), args.run_id, args.directory, partial=args.partial,
                      compact=not args.keep)
    print(path)
    return 0
