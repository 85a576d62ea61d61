"""``simrec sim-to-real``: do the worlds order the algorithms as the real data does? (issue 24)

For each world (a calibrated preset, or any world spec) sized to the real
dataset, ``replicates`` simulations are observed and evaluated under one
:class:`~simrec.calibration.ResponseProtocol` — the protocol the real data
is evaluated under, with the same reference algorithms — and compared with
the real data by :func:`~simrec.calibration.sim_to_real`: per algorithm and
metric, real vs simulated observed value with intervals, and per pair of
algorithms the real order (or a tie) and the share of replicates that
reproduce it.

Seeds: the real data's response uses the first child of ``seed``; world
``w``'s replicate ``r`` the child ``(w, r)`` of the second, so adding a world
or replicates leaves the others' numbers unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from simrec.calibration.response import (
    NOT_MEASURED_TEXT,
    AlgorithmResponse,
    ResponseProtocol,
    SimToReal,
    algorithm_response,
    sim_to_real,
)
from simrec.config.budget import Need, Needs
from simrec.config.models import WorldSpec
from simrec.interactions import Interactions
from simrec.observation import observe

if TYPE_CHECKING:
    from simrec.config.cost import Work

__all__ = ["SimToRealStudy", "run_sim_to_real", "sim_to_real_text", "sim_to_real_needs", "sim_to_real_work"]


@dataclass(frozen=True)
class SimToRealStudy:
    """The real data's response and one :class:`~simrec.calibration.SimToReal` per world."""

    real: AlgorithmResponse
    worlds: tuple[SimToReal, ...]

    def metrics_frame(self) -> pd.DataFrame:
        """Every world's ``table`` with a ``world`` column first."""
        return pd.concat([w.table.assign(world=w.world) for w in self.worlds], ignore_index=True)[
            ["world", *self.worlds[0].table.columns]
        ]

    def orders_frame(self) -> pd.DataFrame:
        """Every world's ``orders`` with a ``world`` column first, and the full-order agreement per metric."""
        frames = []
        for w in self.worlds:
            o = w.orders.assign(world=w.world)
            o["full_order_agreement"] = o["metric"].map(w.full_order_agreement)
            frames.append(o)
        out = pd.concat(frames, ignore_index=True)
        return out[["world", *[c for c in out.columns if c != "world"]]]


def run_sim_to_real(
    observed: Interactions,
    worlds: Sequence[tuple[str, WorldSpec]],
    protocol: ResponseProtocol,
    *,
    replicates: int,
    seed: int,
    on_progress: Callable[[str, int, int], None] | None = None,
    max_pairs: int | None = None,
) -> SimToRealStudy:
    """Evaluate ``protocol`` on ``observed`` and on ``replicates`` simulations of every world.

    Each world is built for the real data's users and items (its preset's
    ``n_items``, if any, is the calibration reference's). ``on_progress(world,
    done, total)`` after each replicate. ``max_pairs``: the generators' memory
    guard (default the library's; the command line sets it from ``--max-memory``,
    checked against :func:`sim_to_real_needs` first).
    """
    if replicates < 1:
        raise ValueError(f"`replicates` must be >= 1; got {replicates}")
    real_seq, sim_seq = np.random.SeedSequence(seed).spawn(2)
    real = algorithm_response(observed, protocol, real_seq)
    results = []
    for w, (name, spec) in enumerate(worlds):
        world = spec.build(observed, name, max_pairs=max_pairs)
        responses = []
        for r in range(replicates):
            seq = np.random.SeedSequence(sim_seq.entropy, spawn_key=(*sim_seq.spawn_key, w, r))
            gen = np.random.default_rng(seq)
            truth = world.preference.generate(gen, max_pairs=world.max_pairs)
            obs = observe(truth, world.profile, world.sampler, gen).observed
            responses.append(algorithm_response(obs, protocol, gen))
            if on_progress is not None:
                on_progress(name, r + 1, replicates)
        results.append(sim_to_real(real, responses, name))
    return SimToRealStudy(real, tuple(results))


def sim_to_real_needs(
    observed: Interactions, worlds: Sequence[WorldSpec], protocol: ResponseProtocol, *, read: Need | None = None
) -> Needs:
    """The study's memory (:func:`simrec.config.budget.sim_to_real_needs`): ``observed`` and the protocol's
    reference algorithms trained on it (their scenario tables, :data:`~simrec.calibration.response.REFERENCE_TABLES`),
    the scores of up to ``protocol.max_users`` users, and the largest world's replicate at the data's size; the
    keys named are the command line's (``--preset[i]``, ``--max-users``, the dataset)."""
    from simrec.config import budget
    from simrec.config.recommenders import reference_specs

    specs = reference_specs(protocol.algorithms)
    needs = []
    for i, w in enumerate(worlds):
        need = w.memory_need(observed, f"--preset[{i}]", n_lists=0, score_users=0)
        needs.append(Need(need.what, need.keys.replace("population.n_users", "the dataset"), need.bytes))
    users = observed.n_users if protocol.max_users is None else protocol.max_users
    return budget.sim_to_real_needs(
        specs,
        needs,
        n_users=observed.n_users,
        n_items=observed.n_items,
        n_pairs=observed.n_pairs,
        max_users=users,
        read=read,
    )


def sim_to_real_work(
    observed: Interactions, worlds: Sequence[WorldSpec], protocol: ResponseProtocol, *, replicates: int
) -> Work:
    """The study's work (:mod:`simrec.config.cost`), for its time estimate: the real data's response (each
    reference algorithm fitted to ``observed`` outside the holdout, scoring up to ``protocol.max_users`` users),
    then ``replicates`` replicates of every world at the data's size, each with the same response
    (:meth:`simrec.config.models.WorldSpec.work`).

    Predicted / measured CPU seconds (``bench/bench_cost_model.py``, 2 December 2026, 2 cores, load 0.8-1.2;
    ``-r 3 --max-users 200``): ``-p ml-100k/ibp-pop`` on ML-100K 20.4 / 12.0, ``-p ml-1m/lda-pop`` on ML-1M
    47.2 / 35.0 (before this estimate, the command announced nothing)."""
    from simrec.config.cost import Work
    from simrec.config.recommenders import reference_specs, response_work

    specs = reference_specs(protocol.algorithms)
    real = response_work(protocol, observed.n_users, observed.n_items, observed.n_pairs)
    sims = [
        w.work(observed, specs, max_users=protocol.max_users, test_fraction=protocol.test_fraction).times(replicates)
        for w in worlds
    ]
    return Work.total([real, *sims])


def sim_to_real_text(study: SimToRealStudy) -> str:
    """The study as plain text: per world and metric, each algorithm's real and simulated value with intervals,
    then the real order of each pair (or a tie) and the share of replicates reproducing it."""
    lines = [f"protocol: {study.real.protocol.label()}"]
    for w in study.worlds:
        reps = int(w.table["replicates"].iloc[0])
        lines.append(f"\n{w.world} ({reps} replicates)")
        for m in w.protocol.metrics:
            lines.append(f"  {m}@{w.protocol.n}:")
            for r in w.table[w.table["metric"] == m].itertuples():
                lines.append(
                    f"    {r.algorithm:<11} real {r.real:.4f} [{r.real_low:.4f}, {r.real_high:.4f}]  "
                    f"sim {r.sim:.4f} [{r.sim_low:.4f}, {r.sim_high:.4f}]  ({r.rel_error:+.0%})"
                )
            for o in w.orders[w.orders["metric"] == m].itertuples():
                agree = (
                    ""
                    if o.real_order == "tie"
                    else f", {NOT_MEASURED_TEXT}"
                    if o.verdict == "not measured"
                    else f", reproduced in {int(o.reproduced)} of {o.replicates} replicates "
                    f"(Wilson [{o.agreement_low:.2f}, {o.agreement_high:.2f}]): {o.verdict}"
                )
                order = f"{o.a} ~ {o.b}: tie" if o.real_order == "tie" else o.real_order
                lines.append(
                    f"    real {order} (gap {o.real_gap:+.4f} [{o.real_gap_low:+.4f}, {o.real_gap_high:+.4f}]){agree}"
                )
            k, r = w.full_order_counts[m]
            lines.append(f"    full order reproduced in {k} of {r} replicates ({w.full_order_agreement[m]:.0%})")
    return "\n".join(lines)
