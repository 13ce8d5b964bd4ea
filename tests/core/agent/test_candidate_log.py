"""A candidate formula that does not parse is dropped with a warning of bounded length."""

from __future__ import annotations

import logging

import pytest

from srh_core.agent.candidates import LOGGED_FORMULA_CHARS, candidate_from_entry


def test_a_huge_formula_that_does_not_parse_is_dropped_and_logged_short(
        caplog: pytest.LogCaptureFixture) -> None:
    # a left-nested sum deeper than the parser allows, as a polynomial fit of 6 inputs
    # of degree 4 writes it (seen in a Feynman benchmark cell: 210 terms, 9,000 characters)
    formula = " + ".join(f"{k}*x**2" for k in range(400))
    with caplog.at_level(logging.WARNING, logger="srh.agent"):
        record = candidate_from_entry({"formula": formula, "is_candidate": True},
                                      "run:R1-C1-L1-K1", "y", "fit_polynomial")
    assert record is None
    [message] = [r.getMessage() for r in caplog.records if "does not parse" in r.getMessage()]
    assert f"({len(formula)} characters)" in message
    assert len(message) < LOGGED_FORMULA_CHARS + 300


def test_a_short_formula_that_does_not_parse_is_logged_whole(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="srh.agent"):
        assert candidate_from_entry({"formula": "x +* 2", "is_candidate": True},
                                    "run:R1-C1-L1-K1", "y", None) is None
    assert any("'x +* 2'" in r.getMessage() for r in caplog.records)
