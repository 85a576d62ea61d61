"""Core helpers: seeds, validation messages, the Interactions type, the task runner, atomic writes."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from simrec._io import write_text
from simrec._random import as_generator, spawn_seeds, task_seed
from simrec._validation import SizeLimitError, check_choice, check_in_range, check_int, check_pairs_budget
from simrec.interactions import Interactions


def test_task_seed_matches_spawn_and_is_independent_of_count():
    a = spawn_seeds(5, 3)
    b = spawn_seeds(5, 10)
    for i in range(3):
        assert a[i].generate_state(4).tolist() == b[i].generate_state(4).tolist()
        assert task_seed(5, i).generate_state(4).tolist() == a[i].generate_state(4).tolist()
    assert task_seed(5, 0).generate_state(2).tolist() != task_seed(5, 1).generate_state(2).tolist()
    # the (i, j) grandchild equals SeedSequence.spawn of the child
    child = task_seed(5, 2)
    assert task_seed(5, 2, 1).generate_state(2).tolist() == child.spawn(2)[1].generate_state(2).tolist()


def test_as_generator():
    g = np.random.default_rng(1)
    assert as_generator(g) is g
    assert as_generator(3).integers(1 << 30) == np.random.default_rng(3).integers(1 << 30)
    with pytest.raises(ValueError, match="`rng`"):
        as_generator(-1)
    with pytest.raises(TypeError, match="`rng`"):
        as_generator("seed")


def test_validation_messages():
    with pytest.raises(ValueError, match=r"`sigma` must be in \[0, 1\); got 1.2"):
        check_in_range("sigma", 1.2, 0, 1, high_open=True)
    with pytest.raises(ValueError, match=r"`lam` must be in \(0, inf\); got 0"):
        check_in_range("lam", 0, 0, None, low_open=True)
    with pytest.raises(TypeError, match="`n_users` must be an integer; got 2.5"):
        check_int("n_users", 2.5, low=1)
    with pytest.raises(TypeError, match="`n_users` must be an integer; got True"):
        check_int("n_users", True, low=1)
    with pytest.raises(ValueError, match=r"`n_users` must be an integer in \[1, inf\]; got 0"):
        check_int("n_users", 0, low=1)
    with pytest.raises(ValueError, match="`kind` must be one of 'a', 'b'; got 'c'"):
        check_choice("kind", "c", ("a", "b"))
    with pytest.raises(ValueError, match="must be finite"):
        check_in_range("x", float("nan"), 0, 1)
    with pytest.raises(SizeLimitError, match="about 3e\\+09"):
        check_pairs_budget(3e9, None, "Uniform(...)")
    check_pairs_budget(10, 100, "ok")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 9)), max_size=60))
def test_from_pairs_is_canonical_and_deduplicated(pairs):
    users = np.array([p[0] for p in pairs], dtype=np.int64)
    items = np.array([p[1] for p in pairs], dtype=np.int64)
    inter = Interactions.from_pairs(users, items, (7, 10))
    dense = np.zeros((7, 10), dtype=int)
    dense[users, items] = 1
    assert (inter.matrix.toarray() == dense).all()
    assert inter.matrix.has_canonical_format
    assert inter.n_pairs == dense.sum()
    assert (inter.user_counts() == dense.sum(1)).all()
    assert (inter.item_counts() == dense.sum(0)).all()
    assert (inter.to_frame()["user"].to_numpy() == inter.row_of_pairs()).all()


def test_interactions_rejects_non_binary_and_unsorted():
    with pytest.raises(ValueError, match="binary"):
        Interactions(sp.csr_array(np.array([[0, 2]])))
    m = sp.csr_array((np.ones(2, dtype=np.int8), np.array([1, 0]), np.array([0, 2])), shape=(1, 2))
    with pytest.raises(ValueError, match="canonical"):
        Interactions(m)
    with pytest.raises(ValueError, match="`user_ids` must have length 1"):
        Interactions(sp.csr_array(np.array([[1, 0]], dtype=np.int8)), user_ids=np.array([1, 2]))
    with pytest.raises(ValueError, match="inside shape"):
        Interactions.from_pairs(np.array([3]), np.array([0]), (2, 2))


def test_atomic_write_leaves_no_partial_file(tmp_path):
    import os

    target = tmp_path / "a.txt"
    write_text(target, "one")
    mask = os.umask(0)
    os.umask(mask)
    assert (target.stat().st_mode & 0o777) == 0o666 & ~mask  # not the 0600 of a temp file

    class Boom(Exception):
        pass

    from simrec._io import atomic_write

    def bad(p):
        p.write_text("half")
        raise Boom

    with pytest.raises(Boom):
        atomic_write(target, bad)
    assert target.read_text() == "one"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]
