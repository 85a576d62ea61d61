"""A short algorithm-response search of an ML-1M world around a KL calibration's point (issue 24).

The KL sweep (``calibration/ml-1m-worlds.toml``) fixes everything the four key statistics see; they barely
see the strength of the personal signal. This search keeps that point and lets simrec's GP move the named
free parameters on the ``algorithm_response`` objective (the sum of the four KLs plus the reference
algorithms' relative error and (1 - Kendall tau)/2, one protocol on both sides) or, with ``--objective
response_loss``, on that response loss alone, with few calls: one trial trains LensKit's ItemKNN and
ImplicitMF on an ML-1M-sized world.

  python calibration/ml-1m-response/run.py <KL trials.jsonl> <out folder> [n_calls] [n_initial] [max_users]
      [--cell factor-pref] [--free signal,obs_pref_exponent] [--name factor-pref-response] [--seed 2024]
      [--objective algorithm_response] [--denoise-top 0] [--denoise-seeds 4]

``--cell`` is ``<preference>-<observation>`` (e.g. ``clustered-pref``: the clustered latent-factor truth);
its search space's parameters that the KL point has and ``--free`` does not name are fixed at the KL point's
values, and every parameter the KL point lacks must be free (each searched over the cell's own range). The
factor world's search (``trials.jsonl`` here) ran as
``run.py calibration/ml-1m-worlds/cells/factor-pref/sum_kl/trials.jsonl <out> 4 4 150``.

Writes ``trials.jsonl`` (resumable) and ``<name>.toml`` (the preset of the best trial) to the out folder;
with ``--denoise-top k`` the k best trials are re-evaluated with ``--denoise-seeds`` fresh simulations each
(``denoise.jsonl``, resumable; :func:`simrec.calibration.denoise`, as ``simrec calibrate`` does) and the preset
is the point with the lowest mean.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simrec.calibration import (  # noqa: E402
    ALGORITHM_RESPONSE,
    RESPONSE_OBJECTIVES,
    CalibrationTarget,
    CellResult,
    Denoised,
    Objective,
    ResponseProtocol,
    algorithm_response,
    calibrate_cell,
    cell_result,
    denoise,
    log_header,
    read_log,
)
from simrec.config.models import CellSpec  # noqa: E402
from simrec.config.presets import preset_tables, write_preset  # noqa: E402
from simrec.datasets import load_dataset  # noqa: E402

_OBSERVATIONS = {"pref": "preference", "pop": "popularity", "unif": "uniform"}


def _kl_point(log: Path) -> dict[str, float]:
    """The best single trial of the KL search (its log; the de-noised choice may differ)."""
    best = min((t for t in read_log(log) if t.status == "ok"), key=lambda t: t.value)
    return {k: float(v) for k, v in best.params.items()}


def _fit(c: CellResult, objective: str) -> dict[str, float]:
    """A preset's ``[fit]`` table at the chosen point (de-noised means when de-noised): the KL of each statistic
    (``kl_<statistic>``), their sum, the objective's value, the response loss and its parts, the simulated
    metrics."""
    details = c.denoised[0].details_mean if c.denoised else c.chosen.details
    fit = {f"kl_{s}": float(v) for s, v in c.kls().items()}
    fit["sum_kl"] = sum(fit.values())
    fit.update({k: float(v) for k, v in details.items() if k.startswith(("response", "sim_"))})
    fit[objective] = float(c.denoised[0].mean if c.denoised else c.chosen.value)
    return fit


def _args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kl_trials", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("n_calls", type=int, nargs="?", default=8)
    ap.add_argument("n_initial", type=int, nargs="?", default=4)
    ap.add_argument("max_users", type=int, nargs="?", default=150)
    ap.add_argument("--cell", default="factor-pref")
    ap.add_argument("--free", default="signal,obs_pref_exponent")
    ap.add_argument("--name", default=None)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--objective", choices=RESPONSE_OBJECTIVES, default=ALGORITHM_RESPONSE)
    ap.add_argument("--denoise-top", type=int, default=0, help="best trials re-evaluated with fresh seeds")
    ap.add_argument("--denoise-seeds", type=int, default=4)
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = _args(argv)
    out, free = args.out, tuple(args.free.split(","))
    preference, _, obs = args.cell.partition("-")
    cell = CellSpec(preference=preference, observation=_OBSERVATIONS.get(obs, obs))
    name = args.name or f"{args.cell}-response"
    out.mkdir(parents=True, exist_ok=True)
    point = _kl_point(args.kl_trials)
    print("KL point", point, flush=True)
    data = load_dataset(ROOT.parent / "shared" / "data" / "ml-1m", kind="movielens")
    target = CalibrationTarget.from_interactions("ml-1m", data, rng=2019)
    protocol = ResponseProtocol(max_users=args.max_users)
    real = algorithm_response(data, protocol, np.random.SeedSequence([2019, 0]))
    print({k: round(v, 4) for k, v in real.means().items()}, flush=True)
    objective = Objective(dataclasses.replace(target, response=real), cell, args.objective)
    space = {d.name: d for d in objective.cell.search_space(target.shape)}
    unknown = sorted(set(free) - set(space))
    if unknown:
        raise SystemExit(f"--free names {unknown}, not in the {args.cell} space {sorted(space)}")
    fixed = {k: v for k, v in point.items() if k in space and k not in free}
    loose = sorted(set(space) - set(fixed) - set(free))
    if loose:
        raise SystemExit(f"{loose} are neither at the KL point nor free: add them to --free")
    res = calibrate_cell(
        objective,
        seed=args.seed,
        n_calls=args.n_calls,
        n_initial=args.n_initial,
        log_path=out / "trials.jsonl",
        fixed=fixed,
        on_trial=lambda t: print(t.index, t.params, round(t.value, 4), flush=True),
    )
    points: tuple[Denoised, ...] = ()
    if args.denoise_top:  # as simrec calibrate's de-noising: the lowest mean over fresh simulations wins
        header = log_header(objective, seed=args.seed, n_initial=args.n_initial, fixed=fixed)
        points = denoise(
            lambda p, seed: objective({**fixed, **p}, seed),
            res,
            seed=args.seed,
            top=args.denoise_top,
            seeds=args.denoise_seeds,
            log_path=out / "denoise.jsonl",
            digest=header["digest"],
        )
        for d in points:
            print(f"de-noised trial {d.trial}: {d.mean:.4f} +- {d.sd:.4f} (n = {d.n})", flush=True)
    c = cell_result(objective, res, points)  # the chosen point as simrec calibrate chooses it
    how = f"trial {c.chosen.index}" + (
        f", de-noised: mean of {c.denoised[0].n} fresh simulations of its {len(c.denoised)} best trials"
        if c.denoised
        else ""
    )
    tables = preset_tables(cell, {**fixed, **c.chosen.params}, target.shape, "ml-1m", _fit(c, args.objective))
    write_preset(
        out / f"{name}.toml",
        tables,
        f"simrec calibration preset ml-1m/{name}: best of {len(res.trials)} GP trials on objective "
        f"{args.objective} ({how}; {', '.join(free)} searched, the rest at the KL sweep's "
        f"point, {args.kl_trials}; protocol: {protocol.label()}).",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
