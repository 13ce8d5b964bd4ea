"""The event timeline: capacity, cursors, truncation metadata, stream-delta folding."""

from __future__ import annotations

import json

import pytest

from srh_core.interactive import InteractionManager, InteractionSnapshotError
from srh_core.interactive.events import EventTimeline


def fill(timeline: EventTimeline, n: int) -> None:
    for i in range(n):
        timeline.append("context", {"i": i})


def test_capacity_keeps_the_newest_and_reports_what_was_discarded():
    timeline = EventTimeline(3)
    fill(timeline, 5)
    batch = timeline.after(0)
    assert [e["seq"] for e in batch["events"]] == [3, 4, 5]
    assert batch["truncated"] is True and batch["discarded_through"] == 2
    assert batch["last_seq"] == 5 and batch["cursor_reset"] is False


@pytest.mark.parametrize(("cursor", "seqs", "truncated"), [
    (0, [3, 4, 5], True), (1, [3, 4, 5], True), (2, [3, 4, 5], False), (4, [5], False),
    (5, [], False)], ids=["start", "inside-discarded", "edge", "middle", "caught-up"])
def test_cursor_semantics(cursor, seqs, truncated):
    timeline = EventTimeline(3)
    fill(timeline, 5)
    batch = timeline.after(cursor)
    assert [e["seq"] for e in batch["events"]] == seqs and batch["truncated"] is truncated


def test_a_cursor_ahead_of_the_timeline_resets():
    timeline = EventTimeline(10)
    fill(timeline, 2)
    batch = timeline.after(7)
    assert batch["cursor_reset"] is True and [e["seq"] for e in batch["events"]] == [1, 2]


@pytest.mark.parametrize("cursor", [-1, 1.5, True, "3"])
def test_a_bad_cursor_is_refused(cursor):
    with pytest.raises(ValueError, match="after_sequence must be an int >= 0"):
        EventTimeline().after(cursor)


@pytest.mark.parametrize("capacity", [0, -3, 2.5, True])
def test_capacity_must_be_a_positive_int(capacity):
    with pytest.raises(ValueError, match="event_capacity must be an int >= 1"):
        InteractionManager(event_capacity=capacity)


def test_deltas_of_one_response_replace_each_other_and_end_at_the_terminal_event():
    timeline = EventTimeline(10)
    timeline.append("assistant_started", {"response_id": "r1"})
    timeline.append("assistant_delta", {"response_id": "r1", "content": "a"})
    timeline.append("assistant_delta", {"response_id": "r2", "content": "x"})
    timeline.append("assistant_delta", {"response_id": "r1", "content": "ab"})
    assert [(e["kind"], e["payload"].get("content")) for e in timeline.after()["events"]] == [
        ("assistant_started", None), ("assistant_delta", "x"), ("assistant_delta", "ab")]
    timeline.append("assistant_completed", {"response_id": "r1", "content": "abc"})
    batch = timeline.after()
    assert [e["kind"] for e in batch["events"]] == ["assistant_started", "assistant_delta",
                                                    "assistant_completed"]
    assert batch["truncated"] is False


def test_payloads_become_strict_json():
    import numpy as np

    event = EventTimeline().append("topk_updated", {"mse": np.float64("nan"), "n": np.int64(3),
                                                    "coord": (1, 2)})
    assert json.loads(json.dumps(event, allow_nan=False))["payload"] == {
        "mse": None, "n": 3, "coord": [1, 2]}


def test_export_restore_keeps_cursor_semantics():
    timeline = EventTimeline(3)
    fill(timeline, 5)
    restored = EventTimeline.restore(timeline.export())
    before, after = timeline.after(1), restored.after(1)
    assert {k: v for k, v in after.items() if k != "server_time"} == {
        k: v for k, v in before.items() if k != "server_time"}
    assert after["truncated"] and restored.next_sequence == 6
    restored.append("context", {})
    assert restored.after(5)["events"][0]["seq"] == 6


def test_restoring_into_a_smaller_capacity_counts_the_dropped_events():
    timeline = EventTimeline(5)
    fill(timeline, 5)
    snapshot = {**timeline.export(), "event_capacity": 2}
    restored = EventTimeline.restore(snapshot)
    batch = restored.after(0)
    assert [e["seq"] for e in batch["events"]] == [4, 5] and batch["discarded_through"] == 3


def test_restore_rejects_a_non_list_of_events():
    with pytest.raises(InteractionSnapshotError, match="must be a list"):
        EventTimeline.restore({**EventTimeline().export(), "events": {}})
