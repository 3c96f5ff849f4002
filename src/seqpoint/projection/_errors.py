"""Error helpers: signed relative error and the geometric mean of absolute errors."""

from __future__ import annotations

from typing import Any, overload

import numpy as np
from numpy.typing import ArrayLike, NDArray

from seqpoint.exceptions import InputError

__all__ = ["geomean_abs_error", "relative_error"]


@overload
def relative_error(pred: float, true: float) -> float: ...
@overload
def relative_error(pred: ArrayLike, true: ArrayLike) -> NDArray[np.float64]: ...


def relative_error(pred: Any, true: Any) -> Any:
    """Signed relative error ``(pred − true) / true`` (0.01 is 1% too high).

    Parameters
    ----------
    pred, true : float or array_like
        Projected and true values (broadcast together); ``true`` must be non-zero.

    Returns
    -------
    float or ndarray
        A float for scalar inputs, else an array of the broadcast shape.
    """
    p = np.asarray(pred, dtype=np.float64)
    t = np.asarray(true, dtype=np.float64)
    if np.any(t == 0):
        raise InputError("relative_error needs non-zero true values; got a true value of 0.")
    out = (p - t) / t
    return float(out) if out.ndim == 0 else out


def geomean_abs_error(errors: ArrayLike) -> float:
    """Geometric mean of ``|errors|`` (how the SeqPoint paper summarises errors).

    Parameters
    ----------
    errors : array_like of shape (n,)
        Relative errors; signs are ignored. An exact (zero) error makes the geometric
        mean 0.

    Returns
    -------
    float
    """
    e = np.abs(np.asarray(errors, dtype=np.float64)).ravel()
    if e.size == 0:
        raise InputError("geomean_abs_error needs at least one error; got an empty array.")
    if not np.all(np.isfinite(e)):
        raise InputError("geomean_abs_error got a non-finite error; check the projections.")
    if np.any(e == 0):
        return 0.0
    return float(np.exp(np.mean(np.log(e))))
