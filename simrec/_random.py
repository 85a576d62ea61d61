"""Random-number conventions shared by every random function of simrec.

Every random function takes ``rng``: a :class:`numpy.random.Generator`, an
``int`` seed, a :class:`numpy.random.SeedSequence`, or ``None`` (fresh OS
entropy, for interactive use only). Nothing in simrec seeds a global state.
Independent tasks (replicates, calibration trials, sweep cells) get child seeds
from :func:`spawn_seeds`, so a task's numbers depend only on the root seed and
the task's index, whatever the execution backend or completion order.
"""

from __future__ import annotations

import numpy as np

RNGLike = np.random.Generator | np.random.SeedSequence | int | None

__all__ = ["RNGLike", "DRAWS_VERSION", "as_generator", "spawn_seeds", "task_seed"]

#: Version of simrec's random draws, recorded in every run folder's manifest.
#: Raised whenever a random function draws differently for the same seed
#: (same law, other numbers), so that a run folder started by an earlier
#: simrec is never resumed with tasks drawn the new way: a mix of the two
#: would not be the numbers of any one seed. 1: simrec 0.1.0 before issue 13;
#: 2: the IBP's later likers as a Bernoulli process
#: (:func:`simrec._subsets.bernoulli_subsets`); the LDA's topics by the
#: Dirichlet-multinomial urn (:meth:`simrec.preference.LDA._topic_counts`)
#: and its item streams refilled in larger chunks.
DRAWS_VERSION = 2


def as_generator(rng: RNGLike) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``rng``.

    A Generator is returned as is (so the caller's stream advances); an int or a
    SeedSequence seeds a new PCG64 generator.
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer, np.random.SeedSequence)):
        if isinstance(rng, (int, np.integer)) and rng < 0:
            raise ValueError(f"`rng` seed must be a non-negative integer; got {rng}")
        return np.random.default_rng(rng)
    raise TypeError(
        f"`rng` must be a numpy Generator, SeedSequence, non-negative int or None; got {type(rng).__name__}"
    )


def spawn_seeds(seed: int | np.random.SeedSequence, n: int) -> list[np.random.SeedSequence]:
    """Child seed sequences ``0..n-1`` of ``seed`` (``SeedSequence.spawn``).

    The i-th child is the same whatever ``n`` is, so a run that grows from 10 to
    100 replicates keeps its first 10 results.
    """
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return [np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key + (i,)) for i in range(n)]


def task_seed(seed: int, *path: int) -> np.random.SeedSequence:
    """Seed of the task at ``path`` below the root ``seed``.

    ``task_seed(s, i)`` equals ``spawn_seeds(s, n)[i]`` for any ``n > i``;
    ``task_seed(s, i, j)`` is the j-th child of that, and so on.
    """
    root = np.random.SeedSequence(seed)
    return np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key + tuple(int(p) for p in path))
