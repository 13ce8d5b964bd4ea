"""Any text a model sends is written and read back, lone surrogates included (issue 22)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from srh_core.jsonio import (
    append_jsonl,
    atomic_write_json,
    atomic_write_text,
    dumps,
    read_json,
    read_jsonl,
)

VALUES = {
    "lone_high": "x1 + \ud800",
    "lone_low": "\udfff end",
    "key_and_value": {"f\ud800": ["\udc80", {"nested": "a\ud800b"}]},
    "backslash_before": "\\\ud800",
    "non_ascii": "é € 😀 \u2028",
}


@pytest.mark.parametrize("value", VALUES.values(), ids=VALUES.keys())
def test_dumps_encodes_as_utf8_and_reads_back(value: object) -> None:
    text = dumps(value)
    text.encode("utf-8")
    assert json.loads(text) == value


def test_valid_text_keeps_its_characters() -> None:
    assert dumps({"s": "é😀"}) == '{"s": "é😀"}'
    assert dumps("\ud800") == '"\\ud800"'


def test_a_surrogate_pair_reads_back_as_its_character() -> None:
    assert json.loads(dumps("\ud83d\ude00")) == "😀"


@pytest.mark.parametrize("value", VALUES.values(), ids=VALUES.keys())
def test_files_round_trip(tmp_path: Path, value: object) -> None:
    append_jsonl(tmp_path / "log.jsonl", {"v": value})
    append_jsonl(tmp_path / "log.jsonl", {"v": "after"})
    assert list(read_jsonl(tmp_path / "log.jsonl")) == [{"v": value}, {"v": "after"}]
    atomic_write_json(tmp_path / "state.json", {"v": value})
    assert read_json(tmp_path / "state.json") == {"v": value}
    (tmp_path / "log.jsonl").read_bytes().decode("utf-8")  # strict UTF-8 on disk


def test_plain_text_with_a_surrogate_is_written_escaped(tmp_path: Path) -> None:
    atomic_write_text(tmp_path / "notes.txt", "plan: \ud800 done\n")
    assert (tmp_path / "notes.txt").read_text(encoding="utf-8") == "plan: \\ud800 done\n"
