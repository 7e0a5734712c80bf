"""Checking what callers give SimIndex: keys, fingerprints, signatures, limits, configurations.

Quick where all is well (a chunk of ASCII keys and ints passes in one look),
and exact where not: every mistake is an InvalidArgumentError (a ValueError)
that says what was given.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from simindex.errors import InvalidArgumentError
from simindex.fingerprint import DEFAULT_CONFIG, FingerprintConfig, check_fingerprint
from simindex.signature import NBYTES, check_signature


def check_key(key: object) -> str:
    if not isinstance(key, str):
        raise InvalidArgumentError(f"a key is a str, not {type(key).__name__}")
    if not key:
        raise InvalidArgumentError("a key cannot be empty")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            f"a key must be valid Unicode text; {key!r} has a lone surrogate "
            "(from bytes that were not UTF-8?)"
        ) from None
    return key


def checked_chunk(
    keys: list[str], fps: list[int], sigs: list[bytes | None] | None = None
) -> tuple[list[str], np.ndarray, list[bytes | None] | None]:
    """A chunk of keys, fingerprints and signatures (None: none at all),
    validated (quickly, where all is well)."""
    if sigs is not None:
        if sigs.count(None) == len(sigs):
            sigs = None
        elif any(type(s) is not bytes or len(s) != NBYTES for s in sigs if s is not None):
            sigs = [check_signature(s) for s in sigs]
    for key in keys:
        if type(key) is not str or not key or not key.isascii():
            check_key(key)
    if any(type(f) is not int for f in fps):
        for f in fps:
            check_fingerprint(f)
    try:
        return keys, np.array(fps, dtype=np.uint64), sigs
    except OverflowError:
        for f in fps:
            check_fingerprint(f)
        raise


def check_limit(limit: object) -> int | None:
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidArgumentError(f"limit must be a whole number of at least 1, not {limit!r}")
    return limit


def as_config(config: FingerprintConfig | Mapping[str, Any] | None) -> FingerprintConfig | None:
    if config is None or isinstance(config, FingerprintConfig):
        return config
    if isinstance(config, Mapping):  # the options given, the rest DEFAULT_CONFIG's
        return FingerprintConfig.from_dict({**json.loads(DEFAULT_CONFIG.to_json()), **config})
    raise InvalidArgumentError(
        f"config is a FingerprintConfig or a dict, not {type(config).__name__}"
    )
