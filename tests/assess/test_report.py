"""A finished assessment: its folder, the report's numbers equal the tidy tables', resuming reuses work."""

from __future__ import annotations

import html
import math
import re
from html.parser import HTMLParser

import pandas as pd
import pytest

from simrec.config.assess import load_assessment
from simrec.labels import estimator_label, metric_label, world_label
from simrec.studies import run_assessment


class _Tables(HTMLParser):
    """Every ``<table id=...>`` of a page as rows of cell texts; counts ``<img>`` and ``<script>``."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.imgs: list[dict] = []
        self.scripts = 0
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        elif tag == "img":
            self.imgs.append(a)
        elif tag == "script":
            self.scripts += 1

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None
        elif tag == "table":
            self._table = None


def _parse(out) -> _Tables:
    p = _Tables()
    p.feed((out / "report.html").read_text(encoding="utf-8"))
    return p


#: A number as the page prints it (``+0.271``, ``1.23e+03``, ``12``).
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d*)?(?:e[+-]?\d+)?")


def _printed_as(cell: str, values: tuple) -> bool:
    """True when ``cell`` prints ``values`` in order, each to the precision it is printed with (NaN: ``n/a``)."""
    if all(isinstance(v, float) and math.isnan(v) for v in values):
        return cell.startswith("n/a")
    texts = _NUMBER.findall(cell)
    if len(texts) != len(values):
        return False
    for text, v in zip(texts, values):
        mantissa, _, exp = text.partition("e")
        decimals = len(mantissa.partition(".")[2])
        half_unit = 0.5 * 10.0 ** (int(exp or 0) - decimals)
        if not abs(float(text) - float(v)) <= half_unit * (1 + 1e-9) + 1e-12:
            return False
    return True


def _yes_no(v) -> str:
    return "n/a" if pd.isna(v) else ("yes" if v else "no")


N = 5  # the tiny assessment's list length

#: Per table of the page: header -> the CSV columns its cell prints (numbers) or a function of the row (text).
_VIEWS = {
    "headline": {
        "Algorithm": lambda r: r["recommender"],
        "Metric": lambda r: metric_label(r["metric"], N),
        "Observed value": ("observed_mean",),
        "True value": ("true_mean",),
        "Missing-data error": ("missing_mean", "missing_lower", "missing_upper"),
        "Sampling error": ("sampling_mean", "sampling_lower", "sampling_upper"),
        "Total error": ("total_mean", "total_lower", "total_upper"),
    },
    "ranking": {
        "Metric": lambda r: metric_label(r["metric"], N),
        "Worlds": lambda r: r["source"] if r["source"] == "all worlds" else world_label(r["source"]),
        "P(observed order = true order)": ("probability", "lower", "upper", "agree", "n"),
        "Most frequent true order": lambda r: r["true_order"],
    },
    "advice": {
        "Metric": lambda r: metric_label(r["metric"], N),
        "Report": lambda r: r["report"],
        "Sample size n": ("n",),
        "Estimator": lambda r: estimator_label(r["estimator"]),
        "Worst relative RMSE": ("worst_rel_rmse",),
        "Lowest interval coverage": ("min_coverage",),
        "Interval known to fail": lambda r: _yes_no(r["coverage_known_to_fail"]),
    },
    "estimators": {
        "Metric": lambda r: metric_label(r["metric"], N),
        "Sample size n": ("n",),
        "Best estimator": lambda r: estimator_label(r["estimator"]),
        "Worst relative RMSE": ("worst_rel_rmse",),
        "Mean |relative error|": ("mean_abs_rel_error",),
        "Lowest interval coverage": ("min_coverage",),
        "Acceptable coverage": lambda r: _yes_no(r["acceptable"]),
        "Interval known to fail": lambda r: _yes_no(r["coverage_known_to_fail"]),
    },
    "worlds": {
        "Fit loss": ("loss",),
        "Used": lambda r: _yes_no(r["used"]),
        "KL item popularity": ("kl_item_popularity",),
    },
    "errors": {
        "Algorithm": lambda r: r["recommender"],
        "Metric": lambda r: metric_label(r["metric"], N),
        "Error": lambda r: r["component"],
        "Mean [interval]": ("mean", "lower", "upper"),
        "SD": ("sd",),
        "n": ("n",),
    },
}


@pytest.mark.slow
def test_folder_holds_the_tables_the_sub_runs_and_a_self_contained_page(tiny_assessment):
    _, out, outcome = tiny_assessment
    for f in (
        "dataset.csv",
        "worlds.csv",
        "errors.csv",
        "headline.csv",
        "ranking.csv",
        "estimators.csv",
        "advice.csv",
        "significance.csv",
        "sim_to_real.csv",
        "sim_to_real_orders.csv",
        "report.html",
        "manifest.json",
        "figures/errors.png",
        "figures/sim_to_real.png",
    ):
        assert (out / f).is_file(), f
    for sub in ("worlds", "sampling"):
        assert (out / sub / "manifest.json").is_file()
    page = _parse(out)
    assert page.scripts == 0 and len(page.imgs) == 4
    assert all(i["src"].startswith("data:image/png;base64,") for i in page.imgs)
    text = (out / "report.html").read_text()
    assert "http://" not in text and "https://" not in text  # no external asset
    e = outcome.errors
    assert set(e["component"]) == {"missing data", "sampling", "total"}
    assert set(outcome.advice["metric"]) == {"recall", "ndcg"}


@pytest.mark.parametrize("table", sorted(_VIEWS))
def test_report_numbers_equal_the_tidy_tables(tiny_assessment, table):
    """Each table of the page is a view of a tidy CSV: human headers, one row per CSV row, every number the CSV's
    to the precision printed (issue 28: 2-3 significant digits; the CSV keeps full precision), no ``nan``."""
    _, out, _ = tiny_assessment
    rows = _parse(out).tables[table]
    frame = pd.read_csv(out / f"{table}.csv")
    header = rows[0]
    assert set(_VIEWS[table]) <= set(header), (table, header)
    assert not any("_" in h for h in header), header  # no snake_case header
    assert len(rows) - 1 == len(frame)
    for html_row, (_, csv_row) in zip(rows[1:], frame.iterrows()):
        cells = dict(zip(header, html_row))
        assert not any("nan" in c.lower() for c in html_row), html_row
        for head, source in _VIEWS[table].items():
            if callable(source):
                assert cells[head] == str(source(csv_row)), (table, head, cells[head])
            else:
                values = tuple(float(csv_row[c]) for c in source)
                assert _printed_as(cells[head], values), (table, head, cells[head], values)


def test_the_printed_form_is_checked_to_its_precision():
    """The helper above can fail: a number off by more than half its last printed digit is refused."""
    assert _printed_as("+0.271 [+0.231, +0.312]", (0.27134, 0.2309, 0.3118))
    assert not _printed_as("+0.271 [+0.231, +0.312]", (0.2718, 0.2309, 0.3118))
    assert _printed_as("1.23e+03", (1234.5,)) and not _printed_as("1.23e+03", (1240.1,))
    assert _printed_as("0.50 [0.19, 0.81] (3 of 6)", (0.5, 0.19, 0.81, 3, 6))
    assert not _printed_as("0.50 [0.19, 0.81] (3 of 6)", (0.5, 0.19, 0.81, 3, 7))


def test_the_page_opens_with_the_bottom_line_consistent_with_the_tables(tiny_assessment):
    """The bottom line comes first, has no ``nan``, names the estimator and n the sampling error shown is from,
    warns that the ranking rests on fewer than 30 evaluations (2 replicates x 1 world), and the terminal's text
    is the same sentences (bottom_line.json keeps them)."""
    import json

    _, out, outcome = tiny_assessment
    text = (out / "report.html").read_text(encoding="utf-8")
    first = text.index("<section")
    assert text[first:].startswith('<section id="bottom-line"')
    bottom = text[first : text.index("</section>", first)]
    assert "nan" not in bottom.lower()
    best = pd.read_csv(out / "estimators.csv")
    picks = best[best["n"] == 20].set_index("metric")["estimator"]
    for metric, est in picks.items():
        assert html.escape(f"{metric_label(metric, N)}: {estimator_label(est)}") in bottom
    assert "rest on 2 simulated evaluations, fewer than 30" in bottom
    assert "Set replicates = 30 in [simulation]" in bottom
    record = json.loads((out / "bottom_line.json").read_text())
    assert record["lines"] == outcome.bottom_line.lines()
    b = outcome.bottom_line
    sentences = [b.value_summary(), *map(b.ranking_sentence, b.ranking), *b.warnings]
    sentences += [f"{metric_label(m, N)}: {t}" for m, t in b.report]
    for sentence in sentences:  # the page says what the terminal says
        assert f"  {sentence}" in record["lines"] or f"  ! {sentence}" in record["lines"]
        assert html.escape(sentence) in bottom
    verdicts = {v["verdict"] for v in record["values"]}
    assert verdicts <= {"within tolerance", "too high", "too low", "uncertain", "not measured"}
    assert len(record["values"]) == 2 * 3 and all(r["n"] == 2 for r in record["ranking"])


def test_sampling_error_is_the_stress_bias_of_the_chosen_estimator(tiny_assessment):
    _, out, outcome = tiny_assessment
    est = pd.read_parquet(out / "sampling" / "estimates.parquet")
    best = pd.read_csv(out / "estimators.csv")
    s = outcome.errors[outcome.errors["component"] == "sampling"]
    for _, r in s.iterrows():
        pick = best[(best["metric"] == r["metric"]) & (best["n"] == 20)].iloc[0]
        cell = est[
            (est["recommender"] == r["recommender"])
            & (est["metric"] == r["metric"])
            & (est["k"] == 5)
            & (est["n"] == 20)
            & (est["estimator"] == pick["estimator"])
        ].iloc[0]
        assert r["mean"] == pytest.approx(cell["bias"]) and r["sd"] == pytest.approx(cell["sd"])


def test_interrupted_run_resumes_with_identical_results(tmp_path, tiny_assessment):
    """Delete some finished shards (as a crash would leave them missing): the re-run recomputes only those."""
    import shutil

    path, out, first = tiny_assessment
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    (copy / "manifest.json").write_text((copy / "manifest.json").read_text().replace('"complete"', '"running"'))
    removed = [
        next((copy / "worlds" / "replicates").glob("*.parquet")),
        next((copy / "sampling" / "tasks").glob("*.npz")),
    ]
    for f in removed:
        f.unlink()
    (copy / "report.html").unlink()
    again = run_assessment(load_assessment(path), copy, progress=False, figures=False)
    assert again.computed == 2 and again.reused == first.computed + first.reused - 2
    pd.testing.assert_frame_equal(again.errors, first.errors)
    pd.testing.assert_frame_equal(again.ranking, first.ranking)


@pytest.mark.parametrize("phase", ["worlds/replicates", "sampling/tasks"])
def test_a_swapped_shard_of_a_sub_run_is_refused(tmp_path, tiny_assessment, phase):
    """Issue 22: a sub-run's shard copied over another is named in one line (exit 2), nothing changed."""
    import shutil

    from cli_helpers import assert_one_line, invoke

    path, out, _ = tiny_assessment
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    first, second = sorted((copy / phase).iterdir())[:2]
    second.write_bytes(first.read_bytes())

    def files() -> dict[str, bytes]:  # a sub-run resumed before the refusal re-completes its own manifest
        return {
            f.relative_to(copy).as_posix(): f.read_bytes()
            for f in copy.rglob("*")
            if f.is_file() and f.name != ".simrec.lock" and f.relative_to(copy).as_posix() != "worlds/manifest.json"
        }

    before = files()
    code, _, err = invoke(["assess", str(path), "--out", str(copy), "--quiet", "--no-figures"])
    assert_one_line(code, err, f"{second}: shard holds task", "delete it and re-run the same command")
    assert files() == before  # the assessment's manifest, tables and report and every shard as they were


@pytest.mark.slow
def test_without_presets_the_six_models_are_calibrated_first(tmp_path, tiny_data):
    """No ``presets``: a (tiny) calibration sweep into ``calibration/`` chooses the worlds."""
    from tests.assess.conftest import assessment_toml

    text = assessment_toml(
        tiny_data,
        presets="n_calls = 8\nn_initial = 8\ndenoise_seeds = 0",
        sizes="sizes = [20]",
        estimators='estimators = ["naive"]',
        n_boot="n_boot = 0",
        replicates="replicates = 1",
    )
    path = tmp_path / "cal.toml"
    path.write_text(text)
    phases = []
    outcome = run_assessment(
        load_assessment(path),
        tmp_path / "out",
        progress=False,
        figures=False,
        on_phase=lambda phase, message: phases.append(phase),
    )
    assert (tmp_path / "out" / "calibration" / "manifest.json").is_file()
    worlds = outcome.worlds
    assert len(worlds) == 6 and worlds["used"].sum() == 1
    assert worlds.loc[worlds["used"], "loss"].item() == worlds["loss"].min()
    assert phases.count("calibration") > 1 and phases[0] == "dataset" and phases[-1] == "report"
    run_pop = __import__("json").loads((tmp_path / "out" / "worlds" / "manifest.json").read_text())
    assert run_pop["scenario_content"]["population"] == {"n_users": 120, "n_items": 150}


@pytest.mark.slow
def test_a_users_own_scorer_by_import_path(tmp_path, tiny_data):
    """A LensKit scorer of the user's, imported from the assessment file's folder, runs in both phases."""
    import shutil

    from tests.assess.conftest import REPO, assessment_toml

    shutil.copy(REPO / "tests" / "fixtures" / "byo" / "simrec_test_scorers.py", tmp_path / "my_scorers_14b.py")
    recs = (
        'recommenders = [{ kind = "lenskit", scorer = "my_scorers_14b:ShrunkPopScorer", name = "ShrunkPop", '
        'params = { shrinkage = 5.0 } }, { kind = "random" }]'
    )
    path = tmp_path / "byo.toml"
    path.write_text(
        assessment_toml(
            tiny_data,
            recommenders=recs,
            sizes="sizes = [20]",
            estimators='estimators = ["naive"]',
            n_boot="n_boot = 0",
            replicates="replicates = 1",
        )
    )
    outcome = run_assessment(load_assessment(path), tmp_path / "out", progress=False, figures=False)
    assert set(outcome.errors["recommender"]) == {"ShrunkPop", "Random"}
    assert outcome.errors.loc[outcome.errors["component"] == "sampling", "mean"].notna().all()


@pytest.mark.slow
def test_intervals_known_to_fail_are_marked_in_tables_terminal_and_page(tmp_path, tiny_data, tiny_assessment):
    """Issue 22: an estimator whose bias makes its interval miss is marked wherever the assessment names it."""
    from tests.assess.conftest import assessment_toml
    from tests.cli_helpers import invoke

    # the tiny assessment's choice among naive, CLS and BV: every row says whether its interval is known to fail
    _, out, _ = tiny_assessment
    best = pd.read_csv(out / "estimators.csv")
    expected = {"naive": True, "CLS": True, "BV(gamma=1)": True, "BV(gamma=0.1)": True, "BV(gamma=0.01)": True}
    expected["BV(gamma=0.001)"] = False
    assert best["coverage_known_to_fail"].tolist() == [expected[e] for e in best["estimator"]]
    cov = pd.read_csv(out / "sampling" / "coverage.csv")
    assert cov.groupby("estimator")["coverage_known_to_fail"].first().to_dict() == {
        e: expected[e] for e in cov["estimator"].unique()
    }

    # naive alone, the rule relaxed so that it is reported: marked in the tables, the terminal and the page
    spec = tmp_path / "naive.toml"
    spec.write_text(
        assessment_toml(
            tiny_data,
            estimators='estimators = ["naive"]',
            n_boot="n_boot = 10\nmax_rel_rmse = 1000\nmin_coverage = 0",
            sizes="sizes = [20]",
        )
    )
    code, stdout, stderr = invoke(["assess", str(spec), "--out", str(tmp_path / "o"), "--no-figures"])
    assert code == 0, stderr
    advice = pd.read_csv(tmp_path / "o" / "advice.csv")
    assert (advice["report"] == "sampled").all() and advice["coverage_known_to_fail"].all()
    assert pd.read_csv(tmp_path / "o" / "estimators.csv")["coverage_known_to_fail"].all()
    marked = "Do not report naive's bootstrap interval as a confidence interval (coverage known to fail *)."
    assert stdout.count(marked) == 2  # recall and nDCG (precision is not sampled)
    assert "* naive: the bootstrap interval measures sampling variability only" in stdout
    page = html.unescape((tmp_path / "o" / "report.html").read_text())
    assert page.count(marked) == 2
    assert "(*) naive: the bootstrap interval measures sampling variability only" in page
