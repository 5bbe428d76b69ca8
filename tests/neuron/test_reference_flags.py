"""The compiler baseline's flags: nkipy's own, with one LNC, the program's."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernelopt.neuron.steps.reference import _lnc_of, with_lnc


@pytest.mark.parametrize(
    ("flags", "want"),
    [
        ("--lnc 1 --internal-tensorizer-opt-level=2", "--lnc 2 --internal-tensorizer-opt-level=2"),
        ("--lnc=1 -O2", "--lnc=2 -O2"),
        ("--logical-nc-config 1", "--logical-nc-config 2"),
        ("--internal-tensorizer-opt-level=2", "--internal-tensorizer-opt-level=2 --lnc 2"),
        ("", "--lnc 2"),
    ],
)
def test_nkipys_lnc_is_replaced_not_followed_by_another(flags: str, want: str) -> None:
    assert with_lnc(flags, 2) == want


def _split(words: list[str]) -> tuple[list[str], list[str]]:
    """(the LNC values, every other word in order)."""
    values, others, i = [], [], 0
    while i < len(words):
        word = words[i]
        if word in ("--lnc", "--logical-nc-config") and i + 1 < len(words):
            values.append(words[i + 1])
            i += 2
            continue
        if word.startswith(("--lnc=", "--logical-nc-config=")):
            values.append(word.split("=", 1)[1])
        else:
            others.append(word)
        i += 1
    return values, others


@given(
    st.lists(
        st.sampled_from(["--lnc 1", "--lnc=2", "--logical-nc-config 1", "-O2", "--x=y", "--y"]),
        max_size=6,
    ),
    st.sampled_from([1, 2]),
)
def test_whatever_the_flags_the_result_carries_the_programs_lnc_everywhere(
    words: list[str], lnc: int
) -> None:
    flags = " ".join(words)
    out = shlex.split(with_lnc(flags, lnc))
    values, others = _split(out)
    assert values and set(values) == {str(lnc)} and _lnc_of(" ".join(out)) == lnc
    assert others == _split(shlex.split(flags))[1]  # nothing else changes
