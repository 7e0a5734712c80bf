"""simindex.validate on its own: what callers give SimIndex (keys,
fingerprints, signatures, limits, configurations) passes as it is, or is
refused with an InvalidArgumentError (a ValueError) that says what was given."""

from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simindex import DEFAULT_CONFIG, FingerprintConfig, InvalidArgumentError
from simindex.signature import NBYTES
from simindex.validate import as_config, check_key, check_limit, checked_chunk

SIG = bytes(range(NBYTES))

# --- check_key -----------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["a", "doc 1", "ключ", "文档", "emoji \U0001f600", " ", "\x00"])
def test_a_key_of_any_valid_text_passes_as_it_is(key: str) -> None:
    assert check_key(key) is key


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (b"bytes", "a key is a str, not bytes"),
        (5, "a key is a str, not int"),
        (None, "a key is a str, not NoneType"),
        ("", "a key cannot be empty"),
        ("bad \udc80 byte", "lone surrogate"),
    ],
)
def test_a_bad_key_is_refused_saying_why(key: object, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message) as caught:
        check_key(key)
    assert isinstance(caught.value, ValueError)
    if isinstance(key, str) and key:
        assert repr(key) in str(caught.value)  # the key as given, escaped


# --- checked_chunk -------------------------------------------------------------------------------


@given(
    st.lists(
        st.tuples(
            st.text(st.characters(exclude_categories=["Cs"]), min_size=1),
            st.integers(0, 2**64 - 1),
        ),
        max_size=50,
    )
)
def test_a_good_chunk_passes_with_its_fingerprints_as_unsigned_64_bit(
    rows: list[tuple[str, int]],
) -> None:
    keys, fps = [k for k, _ in rows], [f for _, f in rows]
    got_keys, array, sigs = checked_chunk(keys, fps)
    assert got_keys == keys and sigs is None
    assert array.dtype == np.uint64 and array.tolist() == fps


def test_the_bounds_of_64_bits_pass_exactly() -> None:
    edges = [0, 1, 2**63 - 1, 2**63, 2**64 - 1]
    _, array, _ = checked_chunk([f"k{i}" for i in range(len(edges))], edges)
    assert array.tolist() == edges


@pytest.mark.parametrize("fp", [-1, 2**64, -(2**63), 2**70, True, False, 1.0, "5", None])
def test_a_fingerprint_outside_64_unsigned_bits_is_refused(fp: object) -> None:
    with pytest.raises(InvalidArgumentError, match=r"a fingerprint is an int in \[0, 2\*\*64\)"):
        checked_chunk(["a", "b"], [3, fp])  # type: ignore[list-item]
    with pytest.raises(InvalidArgumentError) as caught:
        checked_chunk(["a"], [fp])  # type: ignore[list-item]
    assert str(caught.value) == f"a fingerprint is an int in [0, 2**64), not {fp!r}"


@pytest.mark.parametrize(
    ("key", "message"),
    [("", "cannot be empty"), (7, "not int"), ("x\udc80", "lone surrogate")],
)
def test_one_bad_key_among_good_ones_is_refused(key: object, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message):
        checked_chunk(["a", "ключ", key, "b"], [1, 2, 3, 4])  # type: ignore[list-item]


def test_signatures_none_at_all_are_none() -> None:
    assert checked_chunk(["a", "b"], [1, 2], [None, None])[2] is None
    assert checked_chunk([], [], [])[2] is None


def test_signatures_pass_and_bytes_like_ones_become_bytes() -> None:
    sigs: list[bytes | None] = [SIG, None]
    assert checked_chunk(["a", "b"], [1, 2], sigs)[2] == [SIG, None]
    like = [bytearray(SIG), memoryview(SIG), None]
    got = checked_chunk(["a", "b", "c"], [1, 2, 3], like)[2]  # type: ignore[arg-type]
    assert got == [SIG, SIG, None] and all(s is None or type(s) is bytes for s in got or [])


@pytest.mark.parametrize("sig", [b"", bytes(NBYTES - 1), bytes(NBYTES + 1), "x" * NBYTES, 5])
def test_a_signature_of_another_size_or_type_is_refused(sig: object) -> None:
    with pytest.raises(InvalidArgumentError, match=f"a signature is {NBYTES} bytes"):
        checked_chunk(["a", "b"], [1, 2], [SIG, sig])  # type: ignore[list-item]


# --- check_limit ---------------------------------------------------------------------------------


@pytest.mark.parametrize("limit", [None, 1, 2, 10**12])
def test_a_limit_is_none_or_a_whole_number_of_at_least_1(limit: int | None) -> None:
    assert check_limit(limit) == limit


@pytest.mark.parametrize("limit", [0, -1, True, False, 1.0, 2.5, "3", [1]])
def test_a_bad_limit_is_refused_saying_what_it_was(limit: object) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        check_limit(limit)
    assert str(caught.value) == f"limit must be a whole number of at least 1, not {limit!r}"


# --- as_config -----------------------------------------------------------------------------------


def test_no_configuration_or_one_made_already_passes_as_it_is() -> None:
    assert as_config(None) is None
    made = FingerprintConfig(ngram=2)
    assert as_config(made) is made


def test_a_dict_fills_in_from_the_default_configuration_not_the_field_defaults() -> None:
    assert as_config({}) == DEFAULT_CONFIG
    assert as_config({"ngram": 3}) == replace(DEFAULT_CONFIG, ngram=3)
    # The class's field defaults are the first release's; a dict starts from
    # today's default instead wherever the two differ.
    assert asdict(DEFAULT_CONFIG) != asdict(FingerprintConfig())  # (else nothing to tell)
    assert as_config({"ngram": 1}) == DEFAULT_CONFIG != FingerprintConfig(ngram=1)
    assert as_config({"stopwords": not DEFAULT_CONFIG.stopwords}) == replace(
        DEFAULT_CONFIG, stopwords=not DEFAULT_CONFIG.stopwords
    )


def test_a_dict_with_an_unknown_option_or_a_bad_value_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="unknown fingerprint option.*'shingles'"):
        as_config({"shingles": 2})
    with pytest.raises(InvalidArgumentError, match="ngram must be a whole number from 1 to 8"):
        as_config({"ngram": 0})
    with pytest.raises(InvalidArgumentError, match="weighting must be one of"):
        as_config({"weighting": "idf"})


@pytest.mark.parametrize(("config", "name"), [([("ngram", 2)], "list"), ("ngram=2", "str")])
def test_anything_else_as_a_configuration_is_refused(config: object, name: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        as_config(config)  # type: ignore[arg-type]
    assert str(caught.value) == f"config is a FingerprintConfig or a dict, not {name}"
