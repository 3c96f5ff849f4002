"""The vectorised token counter agrees with ``str.split()`` line by line."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from seqpoint.traces import count_whitespace_tokens

ALPHABET = st.sampled_from(
    [*list("ab é漢"), "\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\xa0", "\u2003", "\u2028", "\u3000", "\u200b", "“", "\u205f", "\u1680", "\u202f"]
)


def reference(text: str) -> list[int]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [len(line.split()) for line in lines]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=80))
def test_counts_equal_str_split(text: str) -> None:
    assert count_whitespace_tokens(text.encode()).tolist() == reference(text)


def test_chunk_boundaries() -> None:
    # Tiny blocks force many chunk cuts, including lines longer than a block.
    text = "one two three\n\nfour\u00a0five six seven eight nine\nx\n" * 5 + "tail"
    assert count_whitespace_tokens(text.encode(), chunk=7).tolist() == reference(text)
