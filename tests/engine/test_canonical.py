"""Canonical keys: equal up to trivial rewrites, different otherwise, stable."""

from __future__ import annotations

import subprocess
import sys

import pytest

from srh_engine import canonical_key, parse

EQUAL = [
    ("commutative", ["x*y + 1", "1 + y*x", "(2 - 1) + x*y"]),
    ("associative", ["(x + y) + z", "x + (y + z)", "z + y + x"]),
    ("product-assoc", ["(x*y)*z", "x*(y*z)", "z*x*y"]),
    ("subtraction", ["x - y", "x + (-1)*y", "-y + x"]),
    ("division", ["x/y", "x*y**-1", "x*inv(y)", "1/(y/x)"]),
    ("folding", ["(2 + 3)*x", "5*x", "x*5.0", "x*(10/2)"]),
    ("float-noise", ["0.1*3*x", "0.30000000000000004*x", "0.3*x"]),
    ("like-terms", ["x + x", "2*x"]),
    ("like-factors", ["x*x", "x**2"]),
    ("power-of-product", ["(2*x)**2", "4*x**2"]),
    ("unary-minus", ["-x", "(-1)*x", "0 - x"]),
    ("caret", ["x^2 + sin(y)", "sin(y) + x**2"]),
    ("bound-parameter-is-its-value", ['param("a", 2.0)*x', "2*x"]),
    ("function-args", ["sin(x + y)", "sin(y + x)"]),
    ("nested-sums", ["a*(x + y)", "a*(y + x)"]),
]


@pytest.mark.parametrize("sources", [e[1] for e in EQUAL], ids=[e[0] for e in EQUAL])
def test_equal_keys(sources: list[str]) -> None:
    keys = {canonical_key(parse(source)) for source in sources}
    assert len(keys) == 1, keys


DIFFERENT = [
    ["x + y", "x*y"],
    ["x - y", "y - x"],
    ["x/y", "y/x"],
    ["sin(x)", "cos(x)"],
    ["x**2", "x**3"],
    ["2*x", "2.0001*x"],
    ['param("a")*x', 'param("b")*x'],
    ["exp(x)", "exp(-x)"],
    ["x1*x2", "x1*x3"],
]


@pytest.mark.parametrize("sources", DIFFERENT, ids=["|".join(d) for d in DIFFERENT])
def test_different_keys(sources: list[str]) -> None:
    keys = {canonical_key(parse(source)) for source in sources}
    assert len(keys) == len(sources)


def test_key_is_readable_and_method_matches() -> None:
    assert canonical_key(parse("x*y + 1")) == "add(1,mul(x,y))"
    assert parse("y*x + 1").canonical_key() == "add(1,mul(x,y))"


def test_key_is_stable_across_processes() -> None:
    source = "a*exp(-b*x) + c*sin(x*y) + grouped_param(g, name='k') + 0.1"
    code = f"from srh_engine import parse, canonical_key; print(canonical_key(parse({source!r})))"
    keys = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True, env={"PYTHONHASHSEED": seed}).stdout
            for seed in ("1", "2")}
    assert keys == {canonical_key(parse(source)) + "\n"}
