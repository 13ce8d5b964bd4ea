"""Every user error of the CLI, TOML settings, data files and manifests: one line, exit 2.

Each case runs the real ``srh`` entry point (``main``, in-process; two cases in a
child process) and checks that stderr ends in exactly one ``srh: error: ...``
line naming the field and what it accepts, with exit code 2 and no traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from srh_core.cli import main

PROBLEM = ["--problem", "feynman-I.6.2a", "-L", "1"]


def _csv(rows: list[str], name: str = "data.csv"):
    def make(tmp: Path) -> list[str]:
        (tmp / name).write_text("\n".join(rows) + "\n", encoding="utf-8")
        return ["--data", str(tmp / name)]
    return make


def _toml(text: str):
    def make(tmp: Path) -> list[str]:
        (tmp / "settings.toml").write_text(text, encoding="utf-8")
        return [*PROBLEM[:2], "--config", str(tmp / "settings.toml")]
    return make


def _manifest(manifest: str, arrays: dict[str, np.ndarray]):
    def make(tmp: Path) -> list[str]:
        directory = tmp / "context.data"
        directory.mkdir()
        for name, values in arrays.items():
            np.save(directory / f"{name}.npy", values)
        (directory / "manifest.json").write_text(manifest, encoding="utf-8")
        return ["--data", str(directory), "--target", "y"]
    return make


def _flags(*flags: str):
    return lambda tmp: [*PROBLEM, *flags]


def _spec(axes: dict, variables: dict) -> str:
    return json.dumps({"target": "y", "variables": variables, "axes": axes})


LINEAR = [f"{i},{2 * i + 1}" for i in range(1, 21)]
Y = {"y": np.arange(5.0)}
CASES = {
    "seed_negative": (_flags("--seed", "-1"),
                      "The 'seed' setting must be an int in [0, 4294967295]. Got -1 instead."),
    "samples_negative": (_flags("--samples", "-10"),
                         "The '--samples' option must be an int in [1, 100000000]. Got -10"),
    "noise_negative": (_flags("--noise", "-1"),
                       "The '--noise' option must be a finite number >= 0"),
    "out_unwritable": (_flags("--out", "/proc/srh-issue-16/run"),
                       "The '--out' directory /proc/srh-issue-16/run cannot be written"),
    "openai_without_key": (_flags("--llm", "openai"),
                           "The openai model provider needs the setting OPENAI_API_KEY"),
    "flag_not_an_int": (_flags("-K", "two"), "run: argument -K: invalid int value: 'two'"),
    "run_id_dotdot": (_flags("--run-id", ".."), "The 'run_id' setting must be a string matching"),
    "run_id_dot": (_flags("--run-id", "."), "The 'run_id' setting must be a string matching"),
    "run_id_separator": (_flags("--run-id", "a/b"), "Got 'a/b' instead."),
    "endpoint_bad_name": (_flags("--endpoint", "../lab"), "The 'endpoint' setting must be a "
                          "string matching"),
    "endpoint_unknown": (_flags("--endpoint", "lab"), "The 'endpoint' setting must name one "
                         "of the operator's endpoints (none are configured)"),
    "detach_embedded": (_flags("--detach"), "The '--detach' option needs --backend celery"),
    "own_key_embedded": (_flags("--own-key"), "The '--own-key' option needs --backend celery"),
    "time_limit_zero": (_flags("--time-limit", "0"),
                        "The 'time_limit' setting must be a number > 0 or None. Got 0.0"),
    "toml_search_not_a_table": (_toml("search = 5\n"),
                                "The 'search' entry of "),
    "toml_bool_for_int": (_toml("[search]\nmax_refinement_depth = true\n"),
                          "The 'max_refinement_depth' setting must be an int in [1, 1000]. "
                          "Got True instead."),
    "toml_string_for_float": (_toml('[search]\ntime_limit = "10"\n'),
                              "The 'time_limit' setting must be a number > 0 or None. "
                              "Got '10' instead."),
    "toml_unknown_setting": (_toml("[search]\nmax_refinment_depth = 3\n"),
                             "Unknown setting 'max_refinment_depth'. Did you mean "
                             "'max_refinement_depth'?"),
    "toml_choice": (_toml('[search]\ntool_parser = "yaml"\n'),
                    "The 'tool_parser' setting must be one of 'openai', 'json', 'text', 'xml'."),
    "toml_key_outside_search": (_toml("max_refinement_depth = 2\n[search]\nseed = 1\n"),
                                "the setting 'max_refinement_depth' is at the top level, outside "
                                "the [search] table"),
    "toml_key_in_unknown_table": (_toml("[search]\nseed = 1\n[budget]\nmax_cost = 1.0\n"),
                                  "unknown table [budget] (holding 'max_cost'); settings belong "
                                  "in the [search] table."),
    "toml_misspelt_table": (_toml("[serch]\nmax_refinement_depth = 2\n"),
                            "unknown table [serch] (holding 'max_refinement_depth'); settings "
                            "belong in the [search] table. Did you mean 'search'?"),
    "two_rows": (lambda tmp: [*_csv(["x,y", "1,2", "2,4"])(tmp), "--target", "y"],
                 "The data has 2 row(s): too few for a validation split of 0.2"),
    "one_row": (lambda tmp: [*_csv(["x,y", "1,2"])(tmp), "--target", "y"],
                "The data has 1 row(s): too few for a validation split"),
    "target_dunder": (lambda tmp: [*_csv(["x,__class__", *LINEAR])(tmp), "--target",
                                   "__class__"],
                      "Variable name '__class__' is reserved"),
    "column_keyword": (lambda tmp: [*_csv(["lambda,y", *LINEAR])(tmp), "--target", "y"],
                       "Variable name 'lambda' is not usable in a formula"),
    "column_function_name": (lambda tmp: [*_csv(["sin,y", *LINEAR])(tmp), "--target", "y"],
                             "Variable name 'sin' is reserved: in a formula it is a function"),
    "column_infinite": (lambda tmp: [*_csv(["x,y", "1,inf", *LINEAR])(tmp), "--target", "y"],
                        "Variable 'y' holds 1 infinite value(s)"),
    "cell_not_a_number": (lambda tmp: [*_csv(["x,y", "1,two", *LINEAR])(tmp), "--target", "y"],
                          "line 2, column 'y': 'two' is not a number."),
    "target_missing": (lambda tmp: [*_csv(["x,y", *LINEAR])(tmp), "--target", "z"],
                       "Target 'z' is not a column of"),
    "manifest_nested_deep": (_manifest('{"a":' * 100_000 + "1" + "}" * 100_000, Y),
                             "manifest.json is nested 100000 levels deep; at most 16 levels"),
    "manifest_huge_axis": (_manifest(_spec({"s": {"size": 10**15}},
                                           {"y": {"file": "y.npy", "axes": ["s"]}}), Y),
                           "axes.s.size: Input should be less than or equal to 100000000"),
    "manifest_wrong_shape": (_manifest(_spec({"s": {"size": 5}, "t": {"size": 2}},
                                             {"y": {"file": "y.npy", "axes": ["s", "t"]}}), Y),
                             "The array has 1 dimension(s) but declares 2 axes"),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_user_error_is_one_line_with_exit_2(case, tmp_path: Path, capsys: pytest.CaptureFixture,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    make, expected = case
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = main(["run", *make(tmp_path)])
    stderr = capsys.readouterr().err
    lines = stderr.strip().splitlines()
    assert code == 2, stderr
    assert lines[-1].startswith("srh: error: ") and expected in lines[-1], stderr
    assert sum(line.startswith("srh: error:") for line in lines) == 1
    assert "Traceback" not in stderr
    assert not (tmp_path / "runs").exists()  # refused before any run started


def _sweep(text: str):
    def make(tmp: Path) -> list[str]:
        (tmp / "data.csv").write_text("\n".join(["x,y", *LINEAR]) + "\n", encoding="utf-8")
        (tmp / "sweep.toml").write_text(text, encoding="utf-8")
        return [str(tmp / "sweep.toml"), "--out", str(tmp / "out")]
    return make


def _suite_sweep(problem_name: str):
    def make(tmp: Path) -> list[str]:
        suite = json.loads((Path(__file__).parents[3] / "srh_core" / "problems" /
                            "feynman_public.json").read_text(encoding="utf-8"))
        suite["problems"] = [{**suite["problems"][0], "name": problem_name}]
        (tmp / "suite.json").write_text(json.dumps(suite), encoding="utf-8")
        return _sweep(f'[sweep]\nname = "s"\nsuite = "suite.json"\nproblems = '
                      f'["{problem_name}"]\n')(tmp)
    return make


DATASET = '[[datasets]]\nname = "{}"\npath = "data.csv"\ntarget = "y"\n'
SWEEP_CASES = {
    "sweep_not_a_table": (_sweep("sweep = 3\n"), "the 'sweep' entry must be a table"),
    "settings_not_a_table": (_sweep('[sweep]\nname = "s"\nproblems = ["feynman-I.6.2a"]\n'
                                    "settings = 5\n"),
                             "settings: Input should be a valid dictionary (got 5)"),
    "variant_bool_for_int": (_sweep('[sweep]\nname = "s"\nproblems = ["feynman-I.6.2a"]\n'
                                    '[[variants]]\nname = "v"\nmax_refinement_depth = true\n'),
                             "The 'max_refinement_depth' setting must be an int in [1, 1000]. "
                             "Got True instead."),
    "duplicate_datasets": (_sweep('[sweep]\nname = "s"\n' + DATASET.format("d")
                                  + DATASET.format("d")),
                           "The sweep's datasets names must be unique (a cell is named by them);"
                           " 'd' appears more than once."),
    "dataset_named_like_a_problem": (_sweep('[sweep]\nname = "s"\nproblems = ["feynman-I.6.2a"]'
                                            "\n" + DATASET.format("feynman-I.6.2a")),
                                     "'feynman-I.6.2a' appears more than once"),
    "dataset_name_dotdot": (_sweep('[sweep]\nname = "s"\n' + DATASET.format("..")),
                            "datasets.0.name: String should match pattern"),
    "dataset_name_separator": (_sweep('[sweep]\nname = "s"\n' + DATASET.format("a/b")),
                               "datasets.0.name: String should match pattern"),
    "sweep_name_dotdot": (_sweep('[sweep]\nname = ".."\nproblems = ["feynman-I.6.2a"]\n'),
                          "name: String should match pattern"),
    "variant_name_dotdot": (_sweep('[sweep]\nname = "s"\nproblems = ["feynman-I.6.2a"]\n'
                                   '[[variants]]\nname = ".."\n'),
                            "variants.0.name: String should match pattern"),
    "suite_problem_name_escapes": (_suite_sweep("../evil"), "Problem name '../evil' cannot "
                                   "name a sweep cell"),
    "unknown_problem": (_sweep('[sweep]\nname = "s"\nproblems = ["feynman-I.99.9"]\n'),
                        "feynman-I.99.9"),
}


@pytest.mark.parametrize("case", SWEEP_CASES.values(), ids=SWEEP_CASES.keys())
def test_sweep_file_error_is_one_line_with_exit_2(case, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture) -> None:
    make, expected = case
    code = main(["sweep", *make(tmp_path)])
    stderr = capsys.readouterr().err
    lines = stderr.strip().splitlines()
    assert code == 2, stderr
    assert lines[-1].startswith("srh: error: ") and expected in lines[-1], stderr
    assert sum(line.startswith("srh: error:") for line in lines) == 1
    assert "Traceback" not in stderr
    assert not (tmp_path / "out").exists()


def test_debug_shows_the_traceback(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["run", *PROBLEM, "--seed", "-1", "--debug"])
    stderr = capsys.readouterr().err
    assert code == 2 and "Traceback (most recent call last)" in stderr
    assert stderr.strip().splitlines()[-1].startswith("srh: error: The 'seed' setting")


def _srh(args: list[str], cwd: Path, prelude: str = "") -> subprocess.CompletedProcess:
    code = f"{prelude}\nimport sys\nfrom srh_core.cli import main\nsys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "OPENAI_API_KEY": "test-key"}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_installed_command_reports_one_line(tmp_path: Path) -> None:
    srh = Path(sys.executable).with_name("srh")
    completed = subprocess.run([str(srh), "run", *PROBLEM, "--samples", "-10"], cwd=tmp_path,
                               capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [
        "srh: error: The '--samples' option must be an int in [1, 100000000]. Got -10 instead."]


def test_a_closed_base_url_fails_the_run_in_one_line_without_tracebacks(tmp_path: Path) -> None:
    # The backoff sleeps are skipped; the five connection attempts are real.
    completed = _srh(["run", *PROBLEM, "--llm", "openai:some-model", "--base-url",
                      "http://127.0.0.1:9/v1"], tmp_path,
                     "import srh_core.api.retry as retry\nretry._wait = lambda *args: None")
    assert completed.returncode == 1, completed.stderr
    assert "Traceback" not in completed.stderr
    assert "The above exception was the direct cause" not in completed.stderr
    failures = [line for line in completed.stderr.splitlines() if "failed after 5 attempts" in line]
    assert len(failures) == 1 and "Connection refused" in failures[0]
    assert "--debug shows the traceback" in failures[0]
