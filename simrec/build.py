"""Build typed library objects from validated scenario tables.

This is the only bridge between the pydantic scenario schema
(:mod:`simrec.scenario`) and the library: it returns preference models,
observation models and recommenders, so that nothing downstream reads a config.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .scenario import PopulationSpec, WorldSpec

__all__ = ["build_preference", "build_observation", "build_recommender"]


def build_preference(world: WorldSpec, population: PopulationSpec):
    """The preference model of a world; ``n_users``/``n_items`` from the population."""
    from .preference import IBP, LDA, Uniform

    p = world.preference
    if p is None:  # pragma: no cover - excluded by the schema
        raise ValueError("world has no preference model")
    if p.model == "uniform":
        return Uniform(n_users=population.n_users, n_items=p.n_items or population.n_items, lam=p.lam)
    if p.model == "ibp":
        return IBP(n_users=population.n_users, alpha=p.alpha, c=p.c, sigma=p.sigma)
    return LDA(
        n_users=population.n_users,
        n_items=p.n_items or population.n_items,
        n_topics=p.n_topics,
        lam=p.lam,
        a=p.a,
        b=p.b,
    )


def build_observation(world: WorldSpec):
    """``(profile_model, sampler)`` of a world."""
    from .observation import PopularitySampler, TruncatedBetaBinomial, TruncatedPareto, UniformSampler

    o = world.observation
    if o is None:  # pragma: no cover - excluded by the schema
        raise ValueError("world has no observation model")
    prof = o.profile
    if prof.model == "pareto":
        profile = TruncatedPareto(m_low=prof.m_low, alpha=prof.alpha, m_high=prof.m_high, redraw=prof.redraw)
    else:
        profile = TruncatedBetaBinomial(a=prof.a, b=prof.b, n_max=prof.n_max)
    sampler = PopularitySampler() if o.sampler == "popularity" else UniformSampler()
    return profile, sampler


def build_recommender(spec):
    """A recommender object from its scenario table."""
    from . import recommenders as r

    if spec.kind == "oracle":
        return r.Oracle()
    if spec.kind == "probabilistic_oracle":
        return r.ProbabilisticOracle(p=spec.p)
    if spec.kind == "popular":
        return r.Popular()
    if spec.kind == "random":
        return r.RandomRecommender()
    return r.LensKitRecommender(_LENSKIT_ALGORITHMS[spec.algorithm], name=spec.name or spec.algorithm, **dict(spec.params))


#: Scenario names of LensKit algorithms -> LensKit scorer classes.
_LENSKIT_ALGORITHMS = {
    "item_knn": "ItemKNNScorer",
    "user_knn": "UserKNNScorer",
    "implicit_mf": "ImplicitMFScorer",
    "popular": "PopScorer",
}
