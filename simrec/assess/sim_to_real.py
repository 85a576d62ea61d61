"""The report's sim-to-real check: do the calibrated worlds order your algorithms as your data does?

Reads ``sim_to_real.csv`` and ``sim_to_real_orders.csv``
(:func:`simrec.studies.assess_sim_to_real.assess_sim_to_real`: per world,
:func:`simrec.calibration.response.compare_to_real` of the user's algorithms
at the user's protocol) and gives the :class:`~simrec.assess.bottom_line.Finding`
of the ``sim_to_real`` check of :data:`~simrec.assess.bottom_line.CHECKS`:
two tables (each algorithm's value on the data, with its interval over users,
beside each world's, with its interval over replicates and the relative
error; each pair's order on the data and the share of each world's replicates
that reproduce it, k of R with a Wilson interval), the same evidence as text
lines for the terminal, and as records for ``bottom_line.json``.

Decision (the warning "the worlds disagree with the data", issues 24 and
28): it is raised when, in some calibrated world and for some metric, a pair
of the user's algorithms whose order on the data is not a tie (the paired
interval of the gap, at the assessment's confidence, excludes 0) is reproduced by at most half of the world's
replicates (k / R ≤ 1/2: the verdict ``"disagrees"`` of
:func:`~simrec.calibration.response.compare_to_real`). Then the finding's
verdict is ``"warning"``: the bottom line repeats it among its warnings (the
terminal too) and puts a caution under the ranking question, since the
ranking probabilities are measured in those worlds. A pair reproduced in more
than half of the replicates but with a Wilson interval reaching 1/2 (e.g. 2
of 3) is ``"uncertain"``, said in the summary, not warned about; a real tie
has no order to reproduce, and a pair no replicate measured (``"not measured"``)
is listed as such, neither reproduced nor disagreeing.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from simrec.assess.bottom_line import Finding
from simrec.assess.formatting import format_interval, format_percent, format_share
from simrec.labels import metric_label, world_label

__all__ = ["sim_to_real_finding", "worlds_disagree"]


def worlds_disagree(orders: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``sim_to_real_orders.csv`` the warning is about (verdict ``"disagrees"``; module docstring)."""
    return orders[orders["verdict"] == "disagrees"]


def _real_order(r: pd.Series) -> str:
    gap = format_interval(r["real_gap"], r["real_gap_low"], r["real_gap_high"])
    if r["real_order"] == "tie":
        return f"{r['a']} ~ {r['b']}: a tie (gap {gap})"
    return f"{r['real_order']} (gap {gap})"


def _reproduced(r: pd.Series) -> str:
    if r["real_order"] == "tie":
        return f"real tie (world's gap {format_interval(r['sim_gap'], math.nan, math.nan)})"
    if r["verdict"] == "not measured":
        from simrec.calibration.response import NOT_MEASURED_TEXT

        return NOT_MEASURED_TEXT
    share = format_share(int(r["reproduced"]), int(r["replicates"]), r["agreement_low"], r["agreement_high"])
    return f"{share}: {r['verdict']}"


def _values_table(values: pd.DataFrame, worlds: list[str], n: int, level: str) -> pd.DataFrame:
    rows = []
    for (metric, alg), grp in values.groupby(["metric", "algorithm"], sort=False):
        first = grp.iloc[0]
        row = {
            "Metric": metric_label(str(metric), n),
            "Algorithm": alg,
            f"Your data ({level} interval over users)": format_interval(
                first["real"], first["real_low"], first["real_high"], sign=False
            ),
        }
        for w in worlds:
            r = grp[grp["world"] == w].iloc[0]
            row[world_label(w)] = (
                f"{format_interval(r['sim'], r['sim_low'], r['sim_high'], sign=False)} ({format_percent(r['rel_error'])})"
            )
        rows.append(row)
    return pd.DataFrame(rows)


def _orders_table(orders: pd.DataFrame, worlds: list[str], n: int) -> pd.DataFrame:
    rows = []
    for (metric, a, b), grp in orders.groupby(["metric", "a", "b"], sort=False):
        row = {"Metric": metric_label(str(metric), n), "Your data": _real_order(grp.iloc[0])}
        for w in worlds:
            row[f"{world_label(w)}: reproduced"] = _reproduced(grp[grp["world"] == w].iloc[0])
        rows.append(row)
    return pd.DataFrame(rows)


def _lines(values: pd.DataFrame, orders: pd.DataFrame, worlds: list[str], n: int) -> tuple[str, ...]:
    out = []
    width = max(len(str(a)) for a in values["algorithm"])
    for metric in dict.fromkeys(values["metric"]):
        label = metric_label(str(metric), n)
        out.append(f"{label} (your data vs {', '.join(world_label(w) for w in worlds)}):")
        sub = values[values["metric"] == metric]
        for alg, grp in sub.groupby("algorithm", sort=False):
            first = grp.iloc[0]
            sims = "; ".join(
                f"{format_interval(r['sim'], r['sim_low'], r['sim_high'], sign=False)} ({format_percent(r['rel_error'])})"
                for _, r in grp.iterrows()
            )
            real = format_interval(first["real"], first["real_low"], first["real_high"], sign=False)
            out.append(f"  {alg:<{width}}  {real}  vs  {sims}")
        for (a, b), grp in orders[orders["metric"] == metric].groupby(["a", "b"], sort=False):
            reps = "; ".join(_reproduced(r) for _, r in grp.iterrows())
            out.append(f"  {_real_order(grp.iloc[0])}: {reps}")
    return tuple(out)


def _json_value(v: object) -> object:
    """A cell as JSON: NaN and NA as None, numpy numbers as Python numbers, text as is."""
    if isinstance(v, str):
        return v
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    x = float(v)  # type: ignore[arg-type]
    return x if math.isfinite(x) else None


def _records(values: pd.DataFrame, orders: pd.DataFrame) -> dict[str, list[dict]]:
    def clean(frame: pd.DataFrame) -> list[dict]:
        return [{k: _json_value(v) for k, v in row.items()} for row in frame.to_dict(orient="records")]

    return {"values": clean(values), "orders": clean(orders)}


def sim_to_real_finding(
    values: pd.DataFrame,
    orders: pd.DataFrame,
    *,
    n: int,
    protocol: str,
    source: str,
    not_compared: tuple[str, ...] = (),
    real_users: int = 0,
    confidence: float = 0.95,
) -> Finding | None:
    """The ``sim_to_real`` check's finding from the check's two tables (module docstring); None when empty.

    Parameters
    ----------
    values, orders : DataFrame
        ``sim_to_real.csv`` and ``sim_to_real_orders.csv`` of an assessment.
    n : int
        The protocol's list length (the metrics' labels).
    protocol, source : str
        The compared protocol and where the real values come from, in words.
    not_compared : tuple of str
        The protocol's metrics the check could not compare.
    real_users : int
        Users evaluated on the real data.
    confidence : float, default 0.95
        The level the tables' intervals were computed at (the assessment's
        ``[sampling] confidence``), as the text states it.
    """
    if values.empty:
        return None
    worlds = list(dict.fromkeys(values["world"]))
    reps = sorted({int(r) for r in values["replicates"]})
    level = f"{100 * confidence:g}%"
    paragraphs = [
        f"Your algorithms at your protocol ({protocol}) on your data and in each calibrated world: the observed "
        f"metric, on your data with a {level} interval over its {real_users} evaluated users ({source}), in each "
        f"world with a {level} t interval over its replicates ({', '.join(map(str, reps))}), and the relative error "
        f"(world − data) / data. For each pair of algorithms, the order on your data (a tie when the {level} interval "
        "of the paired per-user gap covers 0) and the share of each world's replicates that order the pair the "
        "same way, with a Wilson interval. Rule: the worlds disagree with your data when at most half of a "
        "world's replicates reproduce an order that is not a tie on your data; an order reproduced by more than "
        "half but with an interval reaching one half is uncertain.",
    ]
    if not_compared:
        paragraphs.append(
            f"Not compared: {', '.join(metric_label(m, n) for m in not_compared)} (at this split the check "
            "compares the metrics computed from the top-N lists, or from the held-out item's rank)."
        )
    tables = (
        ("Your data vs the calibrated worlds, per algorithm", _values_table(values, worlds, n, level)),
        ("The order of your algorithms", _orders_table(orders, worlds, n)),
    )
    lines, records = _lines(values, orders, worlds, n), _records(values, orders)
    bad = worlds_disagree(orders)
    if len(bad):
        r = bad.sort_values("agreement", kind="stable").iloc[0]
        more = f" (and {len(bad) - 1} more pair x metric x world)" if len(bad) > 1 else ""
        summary = (
            f"Sim to real: the calibrated worlds disagree with your data on the order of your algorithms: on "
            f"{metric_label(str(r['metric']), n)} your data has {_real_order(r)}, but {world_label(str(r['world']))} "
            f"reproduces it in only {format_share(int(r['reproduced']), int(r['replicates']), r['agreement_low'], r['agreement_high'])} "
            f"replicates{more}. The errors and ranking probabilities above are measured in worlds where your "
            "algorithms compare differently: they describe those worlds more than your data."
        )
        caution = (
            "The calibrated worlds order your algorithms differently from your data (see Warnings): these "
            "probabilities are measured in those worlds."
        )
        return Finding(
            "warning", summary, tuple(paragraphs), tables=tables, lines=lines, records=records, caution=caution
        )
    strict = orders[orders["verdict"].isin(("reproduced", "uncertain", "disagrees"))]  # measured, not a tie
    uncertain = strict[strict["verdict"] == "uncertain"]
    unmeasured = orders[orders["verdict"] == "not measured"]
    if strict.empty and len(unmeasured):
        summary = (
            "Sim to real: no world replicate has values of both algorithms of any pair whose order your data shows, "
            "so the worlds' order could not be compared; the values are compared below."
        )
    elif strict.empty:
        summary = (
            "Sim to real: on your data every pair of your algorithms is a tie at this protocol, so there is no order "
            "for the worlds to reproduce; the values are compared below."
        )
    elif uncertain.empty:
        low = strict.sort_values("agreement", kind="stable").iloc[0]
        summary = (
            f"Sim to real: the calibrated worlds reproduce every order of your algorithms that your data shows "
            f"({len(strict)} pair x metric x world; lowest: {format_share(int(low['reproduced']), int(low['replicates']), low['agreement_low'], low['agreement_high'])} "
            "replicates)."
        )
    else:
        summary = (
            f"Sim to real: the calibrated worlds reproduce the orders your data shows in more than half of their "
            f"replicates, but {len(uncertain)} of {len(strict)} pair x metric x world rest on too few replicates to "
            "be sure (a coin flip is inside the interval); more replicates would tell."
        )
    if len(unmeasured) and len(strict):
        summary += f" {len(unmeasured)} pair x metric x world could not be compared (no replicate has both values)."
    return Finding("ok", summary, tuple(paragraphs), tables=tables, lines=lines, records=records)
