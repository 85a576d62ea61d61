"""Single-threaded BLAS for the estimators' small dense kernels: :mod:`simrec._blas` (shared with
:mod:`simrec.significance`), re-exported under the names the sampling modules import."""

from simrec._blas import blas_single_thread, single_threaded_blas

__all__ = ["single_threaded_blas", "blas_single_thread"]
