"""Redis commands per refinement step of a distributed run, for any checkout of the project.

Runs one offline C=2 L=6 K=2 run (feynman-I.12.4, 400 samples, no early stop,
one step as tasks) on a private redis-server with a threads branches worker
(concurrency 4) and a prefork tools worker (concurrency 2) started from the
checkout given, and counts INFO commandstats before and after. It is the same
method as ``bench_cluster.py`` (f), written against the API both the current
and the older layouts share, so a figure before a change and after it can be
taken side by side::

    git worktree add /tmp/old-main <commit>
    python scripts/redis_commands_per_step.py /tmp/old-main
    python scripts/redis_commands_per_step.py .

Prints one JSON line: total commands, commands per step, and by command.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

STEPS = 12


def start(root: str, url: str, directory: str) -> list[subprocess.Popen[bytes]]:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("SRH_")},
           "SRH_BROKER_URL": url, "SRH_LOG_FORMAT": "text", "PYTHONPATH": root,
           "OMP_NUM_THREADS": "1"}
    workers = []
    for queue, pool, concurrency in (("branches", "threads", 4), ("tools", "prefork", 2)):
        log = Path(directory) / f"{queue}.log"
        argv = [sys.executable, "-m", "celery", "-A", "srh_workers.app", "worker", "-Q", queue,
                "-P", pool, "-c", str(concurrency), "--prefetch-multiplier", "1",
                "-n", f"{queue}@%h", "--without-mingle", "--without-gossip", "-l", "INFO"]
        with log.open("wb") as stream:
            workers.append(subprocess.Popen(argv, env=env, cwd=root, stdout=stream,
                                            stderr=subprocess.STDOUT, start_new_session=True))
        while "ready." not in log.read_text(errors="replace"):
            time.sleep(0.2)
    return workers


def counts(client: Any) -> dict[str, int]:
    return {name.removeprefix("cmdstat_"): int(value["calls"])
            for name, value in client.info("commandstats").items()}


def measure(url: str) -> dict[str, Any]:
    import redis

    from srh_core.agent import SearchSettings
    from srh_core.problems import load_suite
    from srh_workers.app import make_app
    from srh_workers.config import WorkerSettings
    from srh_workers.submit import submit_run, wait_for_result

    try:
        from srh_workers.flow.tasks import sender
    except ImportError:  # the layout before srh_workers/flow
        from srh_workers.tasks import sender  # type: ignore[no-redef]
    client = redis.Redis.from_url(url)
    app = make_app(WorkerSettings.from_env({"SRH_BROKER_URL": url, "SRH_TASK_MODULES": "none"}))
    problem = load_suite().get("feynman-I.12.4")
    X, y = problem.sample(400, seed=0)
    extra = {"granularity": "step"} if "granularity" in SearchSettings.model_fields else {}
    settings = SearchSettings.build(run_id="commands", global_width=2, max_refinement_depth=6,
                                    local_sample_size=2, early_stop=False, **extra)
    before = counts(client)
    submit_run(client, sender(app), settings, X, {problem.output: y}, "find")
    wait_for_result(client, "commands", timeout=300, poll=0.2)
    time.sleep(1.0)  # the finalizing task's last writes and acks
    after = counts(client)
    by_command = {name: after[name] - before.get(name, 0) for name in after
                  if after[name] != before.get(name, 0)}
    total = sum(by_command.values())
    return {"commands": total, "per_step": total / STEPS,
            "by_command": dict(sorted(by_command.items(), key=lambda item: -item[1]))}


def main() -> int:
    root = str(Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve())
    sys.path.insert(0, root)
    port = 46391
    directory = tempfile.mkdtemp(prefix="srh-commands-")
    url = f"redis://127.0.0.1:{port}/0"
    server = subprocess.Popen(["redis-server", "--port", str(port), "--save", "",
                               "--appendonly", "no", "--dir", directory],
                              stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    os.environ["SRH_BROKER_URL"] = url
    workers = start(root, url, directory)
    try:
        print(json.dumps({"root": root, **measure(url)}))
    finally:
        for worker in workers:
            os.killpg(worker.pid, signal.SIGTERM)
        server.terminate()
    return 0


if __name__ == "__main__":
    sys.exit(main())
