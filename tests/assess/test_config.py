"""Assessment files: bad ones are refused before any work with the boundary's clear messages."""

from __future__ import annotations

from pathlib import Path

import pytest

from simrec.config import ScenarioError
from simrec.config.assess import CELLS, load_assessment, shipped_assessments
from tests.assess.conftest import REPO, assessment_toml
from tests.cli_helpers import invoke


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "a.toml"
    p.write_text(text)
    return p


def test_valid_file_derives_the_sub_studies(tmp_path, tiny_data):
    a = load_assessment(_write(tmp_path, assessment_toml(tiny_data)))
    assert (a.n_users, a.n_items) == (120, 150)
    assert a.sample_sizes == [20, 50]
    best = a.best_cells()
    assert len(best) == 1 and best[0].loss == min(c.loss for c in a.cells)
    run = a.run_scenario(best)
    assert run.evaluation.n == 5 and run.replicates == 2 and run.population.n_users == 943
    stress = a.stress_scenario()
    assert stress.metrics.names == ["recall", "ndcg"]  # precision has no sampled estimator
    assert stress.metrics.k_max == 5 and stress.sampling.sizes == [20, 50]
    assert stress.source.path == str(tiny_data)


def test_presets_by_folder_path_equal_the_shipped_ones(tmp_path, tiny_data):
    by_name = load_assessment(_write(tmp_path, assessment_toml(tiny_data)))
    folder = REPO / "calibration" / "ml-100k" / "presets"
    by_path = load_assessment(_write(tmp_path, assessment_toml(tiny_data, presets=f'presets = "{folder}"')))
    assert [c.cell for c in by_path.cells] == list(CELLS)
    assert [c.world.preference for c in by_path.cells] == [c.world.preference for c in by_name.cells]


@pytest.mark.parametrize(
    "override, expected",
    [
        ({"n": "n = 5\nfoo = 1"}, "protocol.foo: unknown key"),
        ({"n": "n = 0"}, "protocol.n: Input should be greater than or equal to 1; got 0"),
        ({"n": "n = 500"}, "protocol.n: the list length must be <= the dataset's number of items (150); got 500"),
        ({"negatives": "negatives = 1"}, "`negatives` must be 0 (full ranking) or >= 2; got 1"),
        ({"sizes": "sizes = [20, 400]"}, "must be smaller than the dataset's number of items (150); got [400]"),
        ({"sizes": "sizes = []"}, "sampling.sizes: List should have at least 1 item after validation, not 0"),
        ({"dataset_path": 'path = "/no/such/data"'}, "dataset.path: dataset 'tiny' not found at /no/such/data"),
        ({"presets": 'presets = "ml-99k"'}, "calibration.presets: no shipped presets named 'ml-99k' (shipped: "),
        ({"presets": 'presets = "./nowhere/presets"'}, "calibration.presets: preset folder not found at"),
        (
            {"recommenders": 'recommenders = [{ kind = "oracle" }, { kind = "popular" }]'},
            "protocol.recommenders[0]: oracle needs the true preferences",
        ),
        ({"metrics": 'metrics = ["precision"]'}, "protocol.metrics: the sampled evaluation needs at least one of"),
        (
            {
                "recommenders": 'recommenders = [{ kind = "lenskit", algorithm = "item_knn", params = { max_nbrz = 2 } }, '
                '{ kind = "popular" }]'
            },
            "protocol.recommenders[0].params.max_nbrz: unknown parameter",
        ),
    ],
)
def test_bad_files_are_refused_with_the_key_and_value(tmp_path, tiny_data, override, expected):
    path = _write(tmp_path, assessment_toml(tiny_data, **override))
    with pytest.raises(ScenarioError) as err:
        load_assessment(path)
    assert str(path) in str(err.value) and expected in str(err.value)


@pytest.mark.parametrize("split", ["holdout", "last"])
def test_the_worlds_use_the_real_datas_split(tmp_path, tiny_data, split):
    """One protocol on both sides (issue 24): the calibrated worlds' run scenario has the protocol's split."""
    a = load_assessment(_write(tmp_path, assessment_toml(tiny_data, n=f'n = 5\nsplit = "{split}"')))
    run = a.run_scenario(a.best_cells())
    assert run.evaluation.split == split and run.evaluation.build().split == split
    assert a.stress_scenario().source.split == ("last" if split == "last" else "random")
    if split == "holdout":
        b = load_assessment(_write(tmp_path, assessment_toml(tiny_data, n="n = 5\ntest_fraction = 0.3")))
        assert b.run_scenario(b.best_cells()).evaluation.test_fraction == 0.3


def test_a_test_fraction_with_leave_last_out_is_refused_from_the_command_line(tmp_path, tiny_data):
    """The old two-protocol file (leave-last-out on the data, a holdout in the worlds) is refused: exit 2, one
    message naming the file and the key, nothing written."""
    path = _write(tmp_path, assessment_toml(tiny_data, n='n = 5\nsplit = "last"\ntest_fraction = 0.2'))
    code, out, err = invoke(["assess", str(path), "--out", str(tmp_path / "out")])
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"simrec: error: {path}: invalid assessment (1 problem):")
    assert "protocol: `test_fraction` is only used with split = 'holdout'" in err
    assert "got test_fraction = 0.2" in err
    assert not (tmp_path / "out").exists()


def test_command_line_error_is_one_message_and_nothing_is_written(tmp_path, tiny_data):
    path = _write(tmp_path, assessment_toml(tiny_data, presets='presets = "ml-99k"'))
    code, out, err = invoke(["assess", str(path), "--out", str(tmp_path / "out")])
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"simrec: error: {path}: invalid assessment (1 problem):")
    assert not (tmp_path / "out").exists()


def test_not_an_assessment_and_unknown_name(tmp_path):
    p = _write(tmp_path, 'name = "x"\nseed = 1\n')
    with pytest.raises(ScenarioError, match="not an assessment file"):
        load_assessment(p)
    with pytest.raises(ScenarioError, match="no shipped assessment of that name"):
        load_assessment("no-such-assessment")


def test_shipped_assessments_validate_without_their_data():
    """Every shipped file parses (schema) even where its dataset is absent."""
    from simrec.config.assess import AssessmentSpec
    from simrec.config.base import read_toml

    assert {"ml100k-assess", "ml1m-assess"} <= set(shipped_assessments())
    for path in shipped_assessments().values():
        AssessmentSpec.model_validate(read_toml(path))


def test_memory_budget_refuses_before_work(tmp_path, tiny_data):
    from simrec.config.budget import Budget

    path = _write(tmp_path, assessment_toml(tiny_data))
    with pytest.raises(ScenarioError, match="too large for the memory limit"):
        load_assessment(path, budget=Budget(10_000_000, 1))


def test_a_preset_set_shipped_later_is_found_by_name(tmp_path, tiny_data, monkeypatch):
    """``presets = "ml-1m"`` resolves through the package's preset folder (as ml-1m's presets will ship)."""
    import shutil

    import simrec.config.files as files

    root = tmp_path / "presets"
    shutil.copytree(REPO / "simrec" / "presets" / "ml-100k", root / "ml-1m")
    monkeypatch.setattr(files, "_presets_root", lambda: root)
    a = load_assessment(_write(tmp_path, assessment_toml(tiny_data, presets='presets = "ml-1m"')))
    assert [c.cell for c in a.cells] == list(CELLS)


@pytest.mark.parametrize("split", ["holdout", "last"])
def test_the_time_estimate_counts_the_real_holdout_evaluation_only_at_a_holdout(tmp_path, tiny_data, split):
    """The sim-to-real check trains the user's algorithms once more on the data's holdout (one task each);
    at leave-last-out it reuses the sampled evaluation's ranks, so nothing is added."""
    from simrec.config.assess_cost import real_holdout_work
    from simrec.config.cost import BYTES_PER_RATING, file_bytes

    a = load_assessment(_write(tmp_path, assessment_toml(tiny_data, n=f'n = 5\nsplit = "{split}"')))
    pr = a.spec.protocol
    extra = real_holdout_work(
        pr.recommenders,
        n_users=float(a.n_users),
        n_items=float(a.n_items),
        n_pairs=file_bytes(a.data_path) / BYTES_PER_RATING,
        max_users=None,
        test_fraction=pr.test_fraction,
    )
    assert extra.tasks == len(pr.recommenders) and extra.scores > 0
    worlds = a.run_scenario(a.best_cells()).model_copy(update={"significance": a.significance_spec()}).work()
    sampled = a.stress_scenario().work(
        n_candidates=float(a.n_items), n_users=float(a.n_users), n_pairs=file_bytes(a.data_path) / BYTES_PER_RATING
    )
    want = worlds + sampled + (extra if split == "holdout" else extra.times(0.0))
    assert a.work().tasks == pytest.approx(want.tasks) and a.work().scores == pytest.approx(want.scores)


@pytest.mark.parametrize(
    "worlds, expected",
    [
        ('worlds = 1\ncells = ["clustered-pref", "clustered-pref"]', "`cells` lists clustered-pref twice"),
        ('worlds = 1\ncells = ["../factor-pref"]', "`cells`: a cell's name"),
        (
            'worlds = 3\ncells = ["factor-pref", "lda-pop"]',
            "`worlds` must be at most the number of cells considered (2); got 3",
        ),
        ('worlds = 1\ncells = ["nothing-pref"]', "calibration.presets: "),
    ],
)
def test_bad_cells_are_refused(tmp_path, tiny_data, worlds, expected):
    path = _write(tmp_path, assessment_toml(tiny_data, presets='presets = "ml-1m"', worlds=worlds))
    with pytest.raises(ScenarioError) as err:
        load_assessment(path)
    assert expected in str(err.value)


def test_cells_choose_the_worlds_of_a_preset_set(tmp_path, tiny_data):
    """Issue 24's worlds in an assessment: the named presets of the set, ranked among themselves."""
    text = assessment_toml(
        tiny_data, presets='presets = "ml-1m"', worlds='worlds = 2\ncells = ["clustered-pref-wide", "lda-pop"]'
    )
    a = load_assessment(_write(tmp_path, text))
    assert [c.cell for c in a.cells] == ["clustered-pref-wide", "lda-pop"]
    assert a.cells[0].world.preference.model == "clustered"
    assert {c.cell for c in a.best_cells()} == {"clustered-pref-wide", "lda-pop"}


def test_without_presets_the_named_cells_are_calibrated(tmp_path, tiny_data):
    """The sweep searches the named cells' preference models x samplers; a name that is no registered cell is
    refused before any work, naming the registered ones."""
    text = assessment_toml(tiny_data, presets="", worlds='worlds = 1\ncells = ["clustered-pref", "lda-pop"]')
    sweep = load_assessment(_write(tmp_path, text)).sweep_spec()
    assert (sweep.preferences, sweep.observations) == (["clustered", "lda"], ["preference", "popularity"])
    default = load_assessment(_write(tmp_path, assessment_toml(tiny_data, presets=""))).sweep_spec()
    assert [c.name for c in default.cells()] == list(CELLS)
    bad = _write(
        tmp_path, assessment_toml(tiny_data, presets="", worlds='worlds = 1\ncells = ["clustered-pop", "ibp-p"]')
    )
    with pytest.raises(ScenarioError) as err:
        load_assessment(bad)
    assert "calibration.cells: without presets the named cells are calibrated" in str(err.value)
    assert "got 'ibp-p'" in str(err.value) and "got 'clustered-pop'" not in str(err.value)


@pytest.mark.slow
def test_an_assessment_runs_in_a_new_world(tmp_path, tiny_data):
    """`simrec assess` in the clustered world (issue 24: the new worlds run in every study): its replicates are
    drawn from the named preset, and the sim-to-real check compares them with the data."""
    import pandas as pd

    text = assessment_toml(
        tiny_data,
        presets='presets = "ciaodvd-5core"',
        worlds='worlds = 1\ncells = ["clustered-pref"]',
        replicates="replicates = 1",
    )
    path, out = _write(tmp_path, text), tmp_path / "out"
    code, stdout, stderr = invoke(["assess", str(path), "--out", str(out), "--quiet"])
    assert code == 0, stderr
    worlds = pd.read_csv(out / "worlds.csv")
    assert worlds.loc[worlds["used"], "cell"].tolist() == ["clustered-pref"]
    s2r = pd.read_csv(out / "sim_to_real.csv")
    assert set(s2r["world"]) == {"clustered-pref"}
