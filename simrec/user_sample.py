"""A uniform sample of the evaluated users (``max_users``): an evaluation of fewer users, trained as before.

An assessment's quick size (``simrec assess --quick``, issue 28), or a
``[protocol] max_users`` / ``[evaluation] max_users`` / ``source.max_users``
key, evaluates at most ``max_users`` users: :func:`sample_evaluated` keeps a
uniform sample without replacement of the users an evaluation would measure
(those with a test item), drawn from the data's own seed
(:func:`user_sample_generator`: child :data:`USER_SAMPLE_STREAM` of the seed
that made the replicate or the split). Everything else is the full
protocol's: the recommenders train on every user's training data, and the
split, the candidates and the negatives are drawn as without the sample.

Decision (issue 28): the sample is of the *evaluated* users, not of the
dataset. Training on a sample of users would make the algorithms worse
(neighbourhoods and factors from fewer users), so a quick look would
assess other algorithms than the researcher's; evaluating fewer users keeps
the algorithms and the data, and the time goes down with the users scored
(scoring every candidate for every user is what dominates LensKit's cost:
ItemKNN's per-user scoring was 80% of an ML-1M replicate, its training 5%).
Each sampled user's list, score row and metric value are the full
evaluation's for that user; a mean over the sample is an unbiased estimate
of the mean over every evaluated user, with a variance larger by about
:math:`U / m - 1` of the per-user variance over :math:`U` (finite-population
correction):

.. math:: \\operatorname{Var}(\\bar x_m) = \\frac{S^2}{m} \\Bigl(1 - \\frac{m}{U}\\Bigr)

with :math:`S^2` the variance of the per-user values over the :math:`U`
evaluated users. The intervals built on such means (over replicates, repeats
or users) widen by up to :math:`\\sqrt{U / m}`. Quantities that are not
means over users answer for an evaluation of :math:`m` users: the sampled
metrics' estimators fit :math:`m` users' rank histogram (their error is
that of a study of :math:`m` users, larger than the full data's), and the
paired tests of the significance step have the power of :math:`m` users.

Not :mod:`simrec.stress.user_sampling`: that is an experiment about user
sampling (dissertation Tables 6-7); this is a size of an evaluation.
"""

from __future__ import annotations

import numpy as np

from ._validation import check_int

__all__ = [
    "USER_SAMPLE_STREAM",
    "MIN_MAX_USERS",
    "user_sample_generator",
    "sample_evaluated",
    "check_max_users",
    "max_users_rule",
]

#: Child of a replicate's (or split's) seed the user sample is drawn from: an index no recommender,
#: significance (``1_000_000``) or debias (``2**20``, ``2**20 + 1``) stream reaches.
USER_SAMPLE_STREAM = 1 << 21

#: The smallest ``max_users`` accepted: fewer users make every interval too wide to read.
MIN_MAX_USERS = 100


def user_sample_generator(seed: np.random.SeedSequence | int) -> np.random.Generator:
    """The generator of the user sample of the data made from ``seed`` (its child :data:`USER_SAMPLE_STREAM`).

    Its own stream: the truth, the observation, the split and the recommenders
    draw exactly what they draw without a sample.
    """
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, USER_SAMPLE_STREAM)))


def check_max_users(max_users: int | None) -> int | None:
    """``max_users`` validated: None (every user) or an int >= :data:`MIN_MAX_USERS`."""
    if max_users is None:
        return None
    v = check_int("max_users", max_users)
    if v < MIN_MAX_USERS:
        raise ValueError(f"{max_users_rule()}; got {v}")
    return v


def max_users_rule() -> str:
    """The rule of ``max_users`` (the library's message and the files')."""
    return (
        f"`max_users` must be at least {MIN_MAX_USERS} (a smaller sample of users makes every interval too wide "
        "to read), or absent to evaluate every user"
    )


def sample_evaluated(users: np.ndarray, max_users: int | None, seed: np.random.SeedSequence | int) -> np.ndarray:
    """At most ``max_users`` of ``users``, a uniform sample without replacement, in their order.

    Parameters
    ----------
    users : ndarray of int64, shape (U,)
        The evaluated users (rows), ascending.
    max_users : int or None
        None, or ``U <= max_users``: every user (``users`` itself, no draw).
    seed : SeedSequence or int
        The seed that made the data (a replicate's, a split's); the sample
        comes from :func:`user_sample_generator` of it, so it depends on the
        seed only (the same on every backend and worker).

    Returns
    -------
    ndarray of int64, shape (min(U, max_users),)
        Ascending when ``users`` is.

    Examples
    --------
    >>> import numpy as np
    >>> users = np.arange(1000)
    >>> s = sample_evaluated(users, 100, 7)
    >>> s.shape, bool((np.diff(s) > 0).all()), bool((s == sample_evaluated(users, 100, 7)).all())
    ((100,), True, True)
    >>> sample_evaluated(users, 5000, 7) is users
    True
    """
    max_users = check_max_users(max_users)
    users = np.asarray(users)
    if max_users is None or users.size <= max_users:
        return users
    keep = user_sample_generator(seed).choice(users.size, size=max_users, replace=False)
    keep.sort()
    return users[keep]
