"""A short algorithm-response search of the ML-1M latent-factor world around its KL calibration (issue 24).

The KL sweep (``calibration/ml-1m-worlds.toml``) fixes everything the four key statistics see; they barely
see the strength of the personal signal. This search keeps that point and lets simrec's GP move the
signal s and the observation's preference exponent b on the ``algorithm_response`` objective (the sum of
the four KLs plus the reference algorithms' relative error and (1 - Kendall tau)/2, one protocol on both
sides), with few calls: one trial trains LensKit's ItemKNN and ImplicitMF on an ML-1M-sized world.

  python calibration/ml-1m-response/run.py <kl-sweep run folder> <out folder> [n_calls] [n_initial] [max_users]

Writes ``trials.jsonl`` (resumable) and ``factor-pref-response.toml`` (the preset of the best trial) to the
out folder.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simrec.calibration import (  # noqa: E402
    ALGORITHM_RESPONSE,
    CalibrationTarget,
    Objective,
    ResponseProtocol,
    algorithm_response,
    calibrate_cell,
)
from simrec.config.models import CellSpec  # noqa: E402
from simrec.config.presets import preset_tables, write_preset  # noqa: E402
from simrec.datasets import load_dataset  # noqa: E402

FREE = ("signal", "obs_pref_exponent")


def _kl_point(log: Path) -> dict[str, float]:
    """The best single trial of the KL search (its log; the de-noised choice may differ)."""
    trials = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    best = min((t for t in trials if t["status"] == "ok"), key=lambda t: t["value"])
    return {k: float(v) for k, v in best["params"].items()}


def main(argv: list[str]) -> int:
    kl_run, out = Path(argv[0]), Path(argv[1])
    n_calls = int(argv[2]) if len(argv) > 2 else 8
    n_initial = int(argv[3]) if len(argv) > 3 else 4
    max_users = int(argv[4]) if len(argv) > 4 else 150
    out.mkdir(parents=True, exist_ok=True)
    point = _kl_point(kl_run / "ml-1m" / "cells" / "factor-pref" / "sum_kl" / "trials.jsonl")
    print("KL point", point, flush=True)
    data = load_dataset(ROOT.parent / "shared" / "data" / "ml-1m", kind="movielens")
    target = CalibrationTarget.from_interactions("ml-1m", data, rng=2019)
    protocol = ResponseProtocol(max_users=max_users)
    real = algorithm_response(data, protocol, np.random.SeedSequence([2019, 0]))
    print({k: round(v, 4) for k, v in real.means().items()}, flush=True)
    cell = CellSpec(preference="factor", observation="preference")
    objective = Objective(dataclasses.replace(target, response=real), cell, ALGORITHM_RESPONSE)
    fixed = {k: v for k, v in point.items() if k not in FREE}
    res = calibrate_cell(
        objective,
        seed=2024,
        n_calls=n_calls,
        n_initial=n_initial,
        log_path=out / "trials.jsonl",
        fixed=fixed,
        on_trial=lambda t: print(t.index, t.params, round(t.value, 4), flush=True),
    )
    best = {**fixed, **res.best.params}
    fit = {k: float(v) for k, v in res.best.details.items() if k.startswith(("kl_", "response", "sim_"))}
    fit[ALGORITHM_RESPONSE] = float(res.best.value)
    tables = preset_tables(cell, best, target.shape, "ml-1m", fit)
    write_preset(
        out / "factor-pref-response.toml",
        tables,
        f"simrec calibration preset ml-1m/factor-pref-response: best of {len(res.trials)} GP trials on objective "
        f"algorithm_response (trial {res.best.index}; {', '.join(FREE)} searched, the rest at the KL sweep's "
        f"factor-pref point; protocol: {protocol.label()}).",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
