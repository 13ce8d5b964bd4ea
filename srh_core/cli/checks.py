"""Checks of command-line values that no settings model validates, run before any work.

The search settings validate themselves (:mod:`srh_core.agent.settings`);
this module covers what only the command line has: the problem sampling flags
(``--samples``, ``--noise``), the run directory (``--out`` must be creatable),
and, for an embedded run, the model endpoint's own settings (its API key),
resolved before the run starts so a missing key is a usage error, not a
failed run. Every error names the flag and what it accepts.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
from pathlib import Path
from typing import Any

from srh_core.errors import ConfigurationError

MAX_SAMPLES = 100_000_000


def check_arguments(args: argparse.Namespace) -> None:
    """Check the flags of the parsed command (only ``run`` has flags checked here).

    Raises:
        ConfigurationError: A flag's value is outside what it accepts.
    """
    if getattr(args, "command", None) == "run":
        check_run_arguments(args)


def check_run_arguments(args: argparse.Namespace) -> None:
    """Check ``srh run``'s sampling flags and its run directory."""
    samples = getattr(args, "samples", None)
    if samples is not None and not 1 <= samples <= MAX_SAMPLES:
        raise ConfigurationError(f"The '--samples' option must be an int in [1, {MAX_SAMPLES}]."
                                 f" Got {samples!r} instead.", setting="samples")
    noise = getattr(args, "noise", None)
    if noise is not None and not (math.isfinite(noise) and noise >= 0):
        raise ConfigurationError("The '--noise' option must be a finite number >= 0 (relative "
                                 f"noise, 0 for none). Got {noise!r} instead.", setting="noise")
    if getattr(args, "out", None):
        check_writable_directory(args.out, "--out")


def check_writable_directory(path: str | Path, flag: str) -> None:
    """``path`` is a directory this process may write, or one it can create.

    Probed by creating (and removing) a temporary directory where the run
    directory would go: permission bits say nothing for root, and neither do
    they for read-only or virtual file systems such as ``/proc``.

    Raises:
        ConfigurationError: ``path`` is not a directory, or no directory can be
            made in it (or in the nearest existing parent it would be created in).
    """
    target = Path(path).absolute()
    existing = next(p for p in (target, *target.parents) if p.exists())
    setting = flag.lstrip("-")
    if not existing.is_dir():
        what = "is not a directory" if existing == target else f"has a file {existing} on its way"
        raise ConfigurationError(f"The '{flag}' directory {target} {what}; give a directory "
                                 "path.", setting=setting)
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".srh-probe-", dir=existing))
    except OSError as error:
        where = "" if existing == target else f" in {existing}"
        raise ConfigurationError(f"The '{flag}' directory {target} cannot be written{where}: "
                                 f"{error.strerror or error}; give a writable directory.",
                                 setting=setting) from None


def check_run(settings: Any, data: Any) -> None:
    """Before an embedded run starts: its data passes the search's policy, its model resolves.

    A cluster submitter should call :func:`check_run_data` only: there the
    model's credentials live on the workers.

    Raises:
        DataError: The data breaks the data policy (names, values, rows).
        ConfigurationError: The model endpoint cannot be resolved.
    """
    check_run_data(settings, data)
    check_model_endpoint(settings)


def check_run_data(settings: Any, data: Any) -> None:
    """The checks the agent's context applies on commit, on the loaded arrays, without copies.

    So a refused run leaves no run directory behind.

    Args:
        settings: The run's :class:`~srh_core.agent.settings.SearchSettings`.
        data: The loaded :class:`~srh_core.cli.commands.ProblemData` (``X``, ``y``).

    Raises:
        DataError: The data breaks the data policy (names, values, rows).
    """
    import numpy as np

    from srh_core.context.structured import StructuredData
    from srh_core.context.validation import (
        DataLayout,
        check_context_data,
        check_sample_count,
        raise_first,
    )

    if isinstance(data.X, StructuredData):  # graph data: its layout decides the shapes
        from srh_core.context import AgentContext
        from srh_core.context.structured import commit_run_data

        commit_run_data(AgentContext(args=settings), data.X, data.y)
        return
    arrays = {name: np.asarray(values) for name, values in {**data.X, **data.y}.items()}
    target = next(iter(data.y))
    issues = check_context_data(arrays, DataLayout(target=target))
    if not issues:
        issues += filter(None, [check_sample_count(
            len(arrays[target]), settings.validation_fraction, settings.min_train_rows)])
    raise_first(issues)


def check_model_endpoint(settings: Any) -> None:
    """Resolve the run's model endpoints now (API key, base URL), without a request.

    Raises:
        ConfigurationError: The provider is unknown or a required setting (its key) is missing.
    """
    from srh_core.api.endpoints import build_api

    endpoints = [(settings.llm_provider, settings.llm_model)]
    if settings.strong_llm_model:
        endpoints.append((settings.strong_llm_provider or settings.llm_provider,
                          settings.strong_llm_model))
    for provider, model in endpoints:
        resolve = getattr(build_api(settings, provider, model), "resolve", None)
        if callable(resolve):
            resolve()
