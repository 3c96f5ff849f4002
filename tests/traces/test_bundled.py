"""Bundled real data: counts and totals agree with each folder's SOURCE.md."""

from __future__ import annotations

import numpy as np
import pytest

from seqpoint.exceptions import ConfigError
from seqpoint.traces import read_lengths


def test_unknown_bundled_name_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match=r"Unknown bundled data set 'x'. Valid names: librispeech-dev-clean, "
                       r"librispeech-test-clean, librispeech-train-clean-100, multi30k-en-de, wikitext-2-valid, "
                       r"wmt-en-de-sample\.$"):
        read_lengths("bundled:x")


def test_librispeech_frames_match_source_md() -> None:
    lens = read_lengths("bundled:librispeech-train-clean-100")
    assert lens.n_samples == 28539 and lens.unit == "frames" and lens.tgt is None
    # SOURCE.md: 141.0 .. 2452.5 frames (samples/160); rounding up gives 141 .. 2453.
    assert int(lens.src.min()) == 141 and int(lens.src.max()) == 2453
    # 100.59 hours of audio (frames are rounded up, so at most one frame per utterance more).
    hours = lens.src.sum() / 100 / 3600
    assert 100.58 < hours < 100.59 + 28539 / 100 / 3600
    assert read_lengths("bundled:librispeech-dev-clean").n_samples == 2703
    assert read_lengths("bundled:librispeech-test-clean").n_samples == 2620


def test_parallel_sets() -> None:
    wmt = read_lengths("bundled:wmt-en-de-sample")
    # One empty English line is dropped: 10,000 pairs -> 9,999; its English side had 0 tokens.
    assert wmt.n_samples == 9999 and wmt.tgt is not None
    assert int(wmt.src.sum()) == 225063
    assert int(wmt.src.max()) == 50 and int(wmt.tgt.max()) == 50
    m30 = read_lengths("bundled:multi30k-en-de")
    assert m30.n_samples == 29000 and m30.tgt is not None
    assert int(m30.src.sum()) == 345020 and int(m30.tgt.sum()) == 322383
    assert int(np.maximum(m30.src, m30.tgt).max()) == 39


def test_wikitext_paragraphs() -> None:
    lens = read_lengths("bundled:wikitext-2-valid")
    # SOURCE.md: 1,841 non-heading paragraphs of 1..429 tokens; +1 <eos> each.
    assert lens.n_samples == 1841
    assert int(lens.src.min()) == 2 and int(lens.src.max()) == 430
