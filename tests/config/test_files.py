"""Presets by shipped name or by file path (simrec.config.files)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from simrec.config import ScenarioError
from simrec.config.files import _presets_root, load_preset
from simrec.config.run import load_scenario
from simrec.config.stress import load_stress_scenario

SCENARIO = """
name = "by-path"
seed = 1
replicates = 1
[population]
n_users = 943
n_items = 1682
[[world]]
preset = "{preset}"
[evaluation]
n = 10
recommenders = [{{ kind = "popular" }}]
"""


@pytest.fixture()
def exported(tmp_path) -> Path:
    """A shipped preset copied to ``tmp/presets/ml-100k/mine.toml`` (as ``calibrate --export-presets`` writes)."""
    dest = tmp_path / "presets" / "ml-100k" / "mine.toml"
    dest.parent.mkdir(parents=True)
    shutil.copyfile(_presets_root() / "ml-100k" / "ibp-pop.toml", dest)
    return dest


def _scenario(folder: Path, preset: str) -> Path:
    path = folder / "s.toml"
    path.write_text(SCENARIO.format(preset=preset))
    return path


def test_a_preset_file_by_relative_path_equals_the_shipped_preset(exported, tmp_path):
    by_path, _ = load_scenario(_scenario(tmp_path, "presets/ml-100k/mine.toml"))
    by_name, _ = load_scenario(_scenario(tmp_path, "ml-100k/ibp-pop"))
    assert by_path.world[0].preference == by_name.world[0].preference
    assert by_path.world[0].observation == by_name.world[0].observation
    assert by_path.world_names() == ["mine"] and by_name.world_names() == ["ibp-pop"]
    assert load_preset(str(exported)) == load_preset("ml-100k/ibp-pop")  # absolute path


def test_a_preset_path_is_relative_to_the_scenario_file_not_the_current_folder(exported, tmp_path, monkeypatch):
    sub = tmp_path / "study"
    sub.mkdir()
    scenario = _scenario(sub, "../presets/ml-100k/mine.toml")
    monkeypatch.chdir(exported.parent)
    sc, _ = load_scenario(scenario)
    assert sc.world_names() == ["mine"]


def test_a_stress_source_world_takes_a_preset_path(exported, tmp_path):
    path = tmp_path / "st.toml"
    path.write_text(
        'kind = "stress"\nname = "st"\nseed = 1\n[source]\ntype = "simulation"\n'
        "population = { n_users = 943, n_items = 1682 }\n"
        'world = { preset = "presets/ml-100k/mine.toml" }\nrecommenders = [{ kind = "popular" }]\n'
    )
    sc, _ = load_stress_scenario(path)
    assert sc.source.world.preference.model == "ibp"


@pytest.mark.parametrize(
    "setup, preset, needle",
    [
        (None, "presets/none.toml", "preset file '{tmp}/presets/none.toml': no such file"),
        ("mkdir", "presets/dir.toml", "is a folder"),
        ("not toml", "presets/bad.toml", "preset file {tmp}/presets/bad.toml: not valid TOML"),
        ("scenario", "presets/scen.toml", "not a preset (needs [preference] and [observation] tables"),
        ("half", "presets/half.toml", "missing: observation, unexpected: none"),
        (
            None,
            "nowhere/nothing",
            "unknown preset 'nowhere/nothing'; available: ciaodvd-5core/clustered-pref, ciaodvd-5core/factor-pref, ciaodvd-5core/hpf-pref",
        ),
    ],
)
def test_bad_presets_are_reported_with_file_key_and_rule(tmp_path, setup, preset, needle):
    folder = tmp_path / "presets"
    folder.mkdir()
    target = tmp_path / preset
    if setup == "mkdir":
        target.mkdir()
    elif setup == "not toml":
        target.write_text("[preference\n")
    elif setup == "scenario":
        target.write_text(SCENARIO.format(preset="ml-100k/ibp-pop"))
    elif setup == "half":
        target.write_text('[preference]\nmodel = "uniform"\nlam = 5.0\n')
    scenario = _scenario(tmp_path, preset)
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario)
    msg = str(info.value)
    assert msg.startswith(f"{scenario}: world[0].preset: "), msg
    assert needle.format(tmp=tmp_path) in msg, msg
    if setup == "scenario":
        assert "this looks like a scenario file" in msg
