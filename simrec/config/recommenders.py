"""Specs of the recommenders a scenario lists (``{ kind = "oracle" }``, ...).

Each spec validates itself and builds its :mod:`simrec.recommenders` object;
:func:`recommender_problems` checks a list of them (parameters, names, kinds a
source cannot serve) and reports every problem with its key path.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Union

from pydantic import Field, ValidationError

from simrec.config.base import SafeName, Strict

__all__ = [
    "OracleSpec",
    "ProbabilisticOracleSpec",
    "PopularSpec",
    "RandomSpec",
    "LensKitSpec",
    "RecommenderSpec",
    "TRUTH_KINDS",
    "recommender_problems",
]


class OracleSpec(Strict):
    """Recommends the user's true likes (needs the truth: simulations only).

    ``ties``: ``"random"`` (default, the thesis text) or ``"item_id"`` (the
    thesis authors' code: ascending item index, only items seen in training);
    see :class:`simrec.recommenders.Oracle`.
    """

    kind: Literal["oracle"]
    ties: Literal["random", "item_id"] = "random"

    def build(self):
        from simrec.recommenders import Oracle

        return Oracle(ties=self.ties)


class ProbabilisticOracleSpec(Strict):
    """Each slot a true like with probability ``p``, else a random item (thesis §3.3)."""

    kind: Literal["probabilistic_oracle"]
    p: float = Field(ge=0, le=1)

    def build(self):
        from simrec.recommenders import ProbabilisticOracle

        return ProbabilisticOracle(p=self.p)


class PopularSpec(Strict):
    kind: Literal["popular"]

    def build(self):
        from simrec.recommenders import Popular

        return Popular()


class RandomSpec(Strict):
    kind: Literal["random"]

    def build(self):
        from simrec.recommenders import RandomRecommender

        return RandomRecommender()


class LensKitSpec(Strict):
    """A LensKit scorer by its scenario name, with parameters passed to its config."""

    kind: Literal["lenskit"]
    algorithm: Literal["item_knn", "implicit_mf", "user_knn", "popular"]
    name: SafeName | None = None
    params: dict[str, float | int | str | bool] = Field(default_factory=dict)

    #: Scenario names of LensKit algorithms -> LensKit scorer classes.
    ALGORITHMS: ClassVar[dict[str, str]] = {
        "item_knn": "ItemKNNScorer",
        "user_knn": "UserKNNScorer",
        "implicit_mf": "ImplicitMFScorer",
        "popular": "PopScorer",
    }

    def build(self):
        from simrec.recommenders import LensKitRecommender

        return LensKitRecommender(self.ALGORITHMS[self.algorithm], name=self.name or self.algorithm, **dict(self.params))


def _params_problems(where: str, exc: ValidationError) -> list[str]:
    """One line per problem of a LensKit config, with the key path (e.g. ``...params.max_nbrs``)."""
    out = []
    for e in exc.errors():
        key = ".".join(str(p) for p in e["loc"])
        msg = "unknown parameter" if e["type"] == "extra_forbidden" else e["msg"]
        out.append(f"{where}.{key}: {msg} (LensKit {exc.title}); got {e.get('input')!r}")
    return out


RecommenderSpec = Annotated[
    Union[OracleSpec, ProbabilisticOracleSpec, PopularSpec, RandomSpec, LensKitSpec],
    Field(discriminator="kind"),
]

#: Kinds that read the true preferences (impossible on a real dataset).
TRUTH_KINDS: tuple[str, ...] = ("oracle", "probabilistic_oracle")


def recommender_problems(specs: list, where: str, *, truth: bool = True) -> list[str]:
    """Bad recommender parameters, repeated names, and (``truth=False``) oracles without a truth.

    ``where`` prefixes each message with the list's key path (e.g. ``evaluation.recommenders``).
    """
    problems, names = [], []
    for j, r in enumerate(specs):
        if not truth and r.kind in TRUTH_KINDS:
            problems.append(f"{where}[{j}]: {r.kind} needs the true preferences; a dataset source has none "
                            "(use a simulation source)")
            continue
        try:
            names.append(r.build().name)
        except ValidationError as exc:  # a LensKit component's config (pydantic) refused `params`
            problems += _params_problems(f"{where}[{j}].params", exc)
        except (ValueError, TypeError) as exc:
            problems.append(f"{where}[{j}]: {exc}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        problems.append(f"{where}: recommender names must be unique; repeated: {', '.join(dup)}")
    return problems
