"""What a run's ``skills`` and ``skills_dir`` settings do: the skills read_skill offers, the
bundle a cluster run ships, and the command line's options."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import srh_core.tools.skills  # noqa: F401  (registers the tool)
from srh_core.agent import SearchSettings
from srh_core.agent.sragent import SRAgent
from srh_core.errors import ConfigurationError, DataError, InputTooLargeError
from srh_core.skills import bundle as bundle_module
from srh_core.skills.bundle import pack_skills, unpack_skills
from srh_core.tools.base import BaseTool


def skills_folder(root: Path) -> Path:
    folder = root / "skills" / "pendulum-laws"
    (folder / "data").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: pendulum-laws\ndescription: Pendulum periods."
                                     "\n---\n# Pendulums\nT = 2*pi*sqrt(L/g)\n")
    (folder / "data" / "table.csv").write_text("L,T\n1,2.006\n")
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"\0")
    return root / "skills"


def read_skill(agent: SRAgent, **params):
    return BaseTool.create("read_skill", None, skill_manager=agent.skill_manager)(**params)


def test_the_skills_setting_limits_what_read_skill_offers() -> None:
    agent = SRAgent(SearchSettings.build(skills=["sr-harness-engine-syntax"]))
    listed = read_skill(agent)
    assert [s["name"] for s in listed.result["skills"]] == ["sr-harness-engine-syntax"]
    hidden = read_skill(agent, name="discover-symbolic-laws")
    assert not hidden.ok and "No skill is named 'discover-symbolic-laws'" in hidden.result_str
    assert read_skill(agent, name="sr-harness-engine-syntax").ok


def test_a_skills_dir_adds_its_skills_and_bad_settings_are_refused(tmp_path: Path) -> None:
    folder = skills_folder(tmp_path)
    agent = SRAgent(SearchSettings.build(skills_dir=str(folder)))
    names = [s["name"] for s in read_skill(agent).result["skills"]]
    assert "pendulum-laws" in names and "discover-symbolic-laws" in names
    assert "T = 2*pi*sqrt(L/g)" in read_skill(agent, name="pendulum-laws").result_str
    with pytest.raises(ConfigurationError, match="is not a directory"):
        SRAgent(SearchSettings.build(skills_dir=str(tmp_path / "missing")))
    with pytest.raises(ConfigurationError, match="Did you mean 'pendulum-laws'"):
        SRAgent(SearchSettings.build(skills_dir=str(folder), skills=["pendulum-law"]))


def test_a_bundle_unpacks_to_the_same_files_once_and_stays_inside(tmp_path: Path) -> None:
    bundle = pack_skills(skills_folder(tmp_path / "a"))
    assert sorted(bundle) == ["pendulum-laws/SKILL.md", "pendulum-laws/data/table.csv"]
    first = unpack_skills(bundle, tmp_path / "worker")
    assert (first / "pendulum-laws" / "data" / "table.csv").read_text() == "L,T\n1,2.006\n"
    assert unpack_skills(bundle, tmp_path / "worker") == first  # once per content
    with pytest.raises(DataError, match="outside its folder"):
        unpack_skills({"../evil.md": "aGk="}, tmp_path / "worker")
    with pytest.raises(DataError, match="malformed"):
        unpack_skills({"x/SKILL.md": "not base64!"}, tmp_path / "worker")
    assert not (tmp_path / "evil.md").exists()


def test_a_bundle_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bundle_module, "MAX_BUNDLE_BYTES", 10)
    with pytest.raises(InputTooLargeError, match="the most a run ships"):
        pack_skills(skills_folder(tmp_path))


def test_srh_run_takes_skills_options_and_refuses_a_missing_folder(tmp_path: Path) -> None:
    from srh_core.cli import build_parser
    from srh_core.cli.commands import settings_from_args

    args = build_parser().parse_args(["run", "--problem", "feynman-I.12.4", "--skills",
                                      "a,b", "--skills-dir", "/x"])
    settings = settings_from_args(args)
    assert (settings.skills, settings.skills_dir) == (["a", "b"], "/x")
    done = subprocess.run([sys.executable, "-m", "srh_core", "run", "--problem",
                           "feynman-I.12.4", "--skills-dir", str(tmp_path / "none"), "-L", "1"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)
    assert done.returncode == 2, done.stderr
    assert "skills_dir" in done.stderr and "is not a directory" in done.stderr
    assert "Traceback" not in done.stderr


def test_srh_tool_call_reads_the_given_skills(tmp_path: Path) -> None:
    folder = skills_folder(tmp_path)
    (tmp_path / "d.csv").write_text("x,y\n1,2\n2,4\n")
    done = subprocess.run([sys.executable, "-m", "srh_core", "tool", "call", "read_skill",
                           "--data", "d.csv", "--target", "y", "--skills-dir", str(folder),
                           "--skills", "pendulum-laws"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1:] == ["- pendulum-laws (custom): Pendulum periods."]
