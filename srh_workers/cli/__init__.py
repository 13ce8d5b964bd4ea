"""The cluster commands of ``srh``, plugged in through the ``srh.commands`` entry point.

Adds ``srh worker`` and ``srh metrics`` (:mod:`.worker`), ``srh status``, ``srh result``,
``srh cancel``, ``srh kick``, ``srh refresh-data`` and the ``celery`` backend of ``srh run`` (with
``--detach``) and of ``srh sweep`` (:mod:`.runs`), ``srh export``, and the cluster's
sweep actions and control target. Connection settings come from the environment
(``SRH_BROKER_URL``, ``SRH_RESULT_BACKEND``, ``SRH_REDIS_URL``; :mod:`.connections`).
Without the plugin, ``python -m srh_workers.cli worker ...`` starts workers.
"""

from __future__ import annotations

from typing import Any

from srh_workers.cli.runs import (
    add_export_command,
    celery_sweep_backend,
    handle_cancel,
    handle_kick,
    handle_refresh_data,
    handle_result,
    handle_status,
    run_celery,
)
from srh_workers.cli.worker import add_metrics_command, add_worker_command

__all__ = ["register"]


def register(subparsers: Any, backends: dict[str, Any]) -> None:
    """The plugin hook: add the cluster commands and the celery backend."""
    add_worker_command(subparsers)
    add_metrics_command(subparsers)
    backends["celery"] = run_celery
    run = subparsers.choices.get("run")
    if run is not None:
        run.add_argument("--detach", action="store_true",
                         help="(celery) submit, print the run id and exit")
        run.add_argument("--own-key", action="store_true",
                         help="(celery) send the provider's key from this shell's environment "
                              "(e.g. OPENAI_API_KEY) with the run; it is stored with the run "
                              "in Redis and is the only key workers send to its --base-url")
    status = subparsers.add_parser("status", help="runs, branches, queue depth and workers")
    status.add_argument("run_id", nargs="?")
    status.add_argument("--json", action="store_true")
    status.set_defaults(handler=handle_status)
    result = subparsers.add_parser("result", help="the result of a distributed run")
    result.add_argument("run_id")
    result.add_argument("--wait", type=float, default=None, metavar="SECONDS",
                        help="wait up to SECONDS for the run to finish")
    result.add_argument("--json", action="store_true")
    result.set_defaults(handler=handle_result)
    cancel = subparsers.add_parser("cancel", help="stop a distributed run at its next step")
    cancel.add_argument("run_id")
    cancel.set_defaults(handler=handle_cancel)
    kick = subparsers.add_parser("kick", help="re-send a stalled run's next tasks (idempotent)")
    kick.add_argument("run_id")
    kick.set_defaults(handler=handle_kick)
    refresh = subparsers.add_parser(
        "refresh-data", help="give a running distributed run new data (its branches are told "
                             "at their next step)")
    refresh.add_argument("run_id")
    refresh.add_argument("--data", required=True, metavar="PATH",
                         help="a CSV/.npz table or a context.data directory: every column")
    refresh.add_argument("--target", help="the target column (default: the run's, or the "
                                          "directory's manifest)")
    refresh.set_defaults(handler=handle_refresh_data)
    from srh_core.cli import SWEEP_BACKENDS
    from srh_core.cli.control_commands import CONTROL_TARGETS
    from srh_workers.control.cli import cluster_target

    SWEEP_BACKENDS["celery"] = celery_sweep_backend
    from srh_workers.sweeps.cli import register as register_sweeps

    register_sweeps()
    add_export_command(subparsers)
    if cluster_target not in CONTROL_TARGETS:
        CONTROL_TARGETS.append(cluster_target)
