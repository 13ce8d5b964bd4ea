"""What a run does when its data changes mid-run: describe the change, tell the model.

The shared :class:`~srh_core.context.AgentContext` counts its data changes
(``context.revision``: every ``commit_data``, ``commit_context_data``,
``add_features``... bumps it). A run's tools are built for one revision;
:meth:`SRAgent.refresh_data <srh_core.agent.SRAgent.refresh_data>` brings
them to the context's current one (new train/validation splits, tools and
executor rebuilt). Each branch remembers the revision its model was last
told about (``BranchState.data_revision``); at the next step boundary
(``SRAgent.open_step``, the same code in both runtimes) a branch that is
behind gets one message (:func:`refresh_message`, the reference's
``build_data_refresh_message``) saying what changed.

Candidates already recorded keep the scores they got on the data they were
found on: each carries ``details["data_revision"]``, the revision it was
scored against, and nothing is re-scored (a re-score is another evaluation
the model can ask for, and on a cluster the pool is shared by tasks that may
still be scoring on the old revision). The run's ranking, front and restart
seeds therefore mix revisions; the refresh message tells the model so.

On a cluster the new data is published as another version of the run's
context payload (``srh_workers.store.RedisRunStore.publish_data``) and the
run's record names the current version; each task loads the version named
there, so the workers' tools see the new data from their next task on.
"""

from __future__ import annotations

from typing import Any

#: ``CandidateRecord.details`` key: the data revision a candidate was scored against.
REVISION_DETAIL = "data_revision"


def data_change(context: Any, previous_revision: int | None) -> dict[str, Any]:
    """The change from ``previous_revision`` to the context's current data, as plain JSON.

    Returns:
        ``previous_revision``, ``revision``, ``target``, ``features``,
        ``n_samples``, ``variable_descriptions`` (of the target and features
        that have one) and ``splits`` (rows per split).
    """
    features = list(context.feature_names())
    described = context.variable_descriptions
    validation = context.validation_split
    return {
        "previous_revision": previous_revision, "revision": context.revision,
        "target": context.target, "features": features, "n_samples": context.n_samples,
        "variable_descriptions": {name: described[name] for name in [context.target, *features]
                                  if described.get(name, "").strip()},
        "splits": {"train": context.train_split.n_samples,
                   "validation": 0 if validation is None else validation.n_samples},
    }


def refresh_message(change: dict[str, Any]) -> dict[str, str]:
    """The user message that tells a branch's model about ``change`` (:func:`data_change`)."""
    descriptions = change.get("variable_descriptions") or {}
    lines = [
        "[Harness] The data changed during the run (data revision "
        f"{change['previous_revision']} -> {change['revision']}).",
        f"Target: {change['target']}; features: {', '.join(change['features'])}; "
        f"{change['n_samples']} rows (train {change['splits']['train']}, validation "
        f"{change['splits']['validation']}).",
        "The tools now use the new data. Scores reported before this message were computed "
        "on the previous data: re-evaluate a formula before relying on its earlier score.",
    ]
    if descriptions:
        lines.append("Variables:")
        lines += [f"- {name}: {text}" for name, text in descriptions.items()]
    return {"role": "user", "content": "\n".join(lines)}
