"""The one error vocabulary of seqpoint: anything a user can cause raises a subclass of
``ValueError`` (or ``TypeError``) whose message names the bad value and says how to fix it; the
CLI turns these into one line on stderr and exit status 2. ``assert`` is for internal invariants."""

from __future__ import annotations

__all__ = ["AdjustedInputWarning", "AssumedInputWarning", "ConfigError", "InputError", "NotFittedError",
           "SeqPointError", "SeqPointWarning"]


class SeqPointError(ValueError):
    """Base class of every error a user can cause."""


class InputError(SeqPointError):
    """Bad input data: missing file, wrong column, invalid lengths, empty data."""


class ConfigError(SeqPointError):
    """Bad parameter or configuration value: unknown name, out-of-range number."""


class NotFittedError(SeqPointError, AttributeError):
    """An estimator's fitted attribute was read before ``fit``."""


class SeqPointWarning(UserWarning):
    """Base class of seqpoint's warnings."""


class AdjustedInputWarning(SeqPointWarning):
    """Input was adjusted or ignored (e.g. rows dropped, lengths clipped)."""


class AssumedInputWarning(SeqPointWarning):
    """seqpoint could not read something about the user's pipeline (a batch without an
    attention mask, a collator it cannot run) and says what it assumed instead."""
