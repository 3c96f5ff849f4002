"""Real length distributions shipped with seqpoint (see ``seqpoint/data/*/SOURCE.md``)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from importlib import resources

import numpy as np

from seqpoint.exceptions import AdjustedInputWarning, ConfigError
from seqpoint.traces._files import decompress
from seqpoint.traces._lengths import Lengths
from seqpoint.traces._tabular import read_csv_lengths
from seqpoint.traces._text import count_whitespace_tokens, read_parallel_lengths, split_lines

__all__ = ["BUNDLED", "BundledDataset", "bundled_lengths"]


@dataclass(frozen=True, kw_only=True)
class BundledDataset:
    """One shipped length distribution."""

    name: str
    """Name used by :func:`bundled_lengths` and ``bundled:NAME`` on the command line."""
    folder: str
    """Folder under ``seqpoint/data`` holding the files and their SOURCE.md."""
    files: tuple[str, ...]
    """Gzipped files read (one, or source and target for parallel text)."""
    description: str
    """What a sample is and how its length is counted."""


BUNDLED: dict[str, BundledDataset] = {d.name: d for d in (
    *(BundledDataset(name=f"librispeech-{split}", folder="librispeech", files=(f"{split}.csv.gz",),
                     description=f"{n} LibriSpeech utterances; 10 ms frames = ceil(samples at 16 kHz / 160).")
      for split, n in (("train-clean-100", "28,539"), ("dev-clean", "2,703"), ("test-clean", "2,620"))),
    BundledDataset(name="wmt-en-de-sample", folder="wmt-en-de-sample-opennmt",
                   files=("src-train.txt.gz", "tgt-train.txt.gz"),
                   description="10,000 Moses-tokenized en-de pairs (OpenNMT-py sample of WMT-style text); "
                   "whitespace tokens; the one pair with an empty English line is dropped (9,999 pairs)."),
    BundledDataset(name="multi30k-en-de", folder="multi30k-en-de", files=("train.en.gz", "train.de.gz"),
                   description="29,000 Multi30k en-de caption pairs; whitespace tokens of the raw text."),
    BundledDataset(name="wikitext-2-valid", folder="wikitext-2", files=("valid.txt.gz",),
                   description="1,841 WikiText-2 validation paragraphs (non-empty, non-heading lines); "
                   "whitespace tokens + 1 end-of-line token."),
)}


def bundled_lengths(name: str) -> Lengths:
    """Lengths of a shipped data set: ``name`` is one of :data:`BUNDLED` (a ``bundled:``
    prefix accepted); frames for LibriSpeech, tokens otherwise, ``tgt`` for the parallel sets."""
    key = name.removeprefix("bundled:")
    if key not in BUNDLED:
        raise ConfigError(f"Unknown bundled data set {key!r}. Valid names: {', '.join(sorted(BUNDLED))}.")
    ds = BUNDLED[key]
    source = f"bundled:{key}"
    data = [decompress(resources.files("seqpoint").joinpath("data", ds.folder, f).read_bytes(),
                       name=f"seqpoint/data/{ds.folder}/{f}") for f in ds.files]
    if ds.folder == "librispeech":
        return read_csv_lengths(ds.files[0], column="length", sample_rate=16000, _data=data[0], _source=source)
    if len(ds.files) == 2:
        with warnings.catch_warnings():
            # The dropped empty pair is documented in the data set's description.
            warnings.simplefilter("ignore", AdjustedInputWarning)
            return read_parallel_lengths(*ds.files, _source=source, _data=data)
    # wikitext-2-valid: paragraphs, as word-level LMs count them (tokens plus one <eos>).
    counts = count_whitespace_tokens(data[0])
    lines = split_lines(data[0])
    heading = np.fromiter((ln.strip().startswith("=") and ln.strip().endswith("=") for ln in lines),
                          dtype=bool, count=len(lines))
    keep = (counts > 0) & ~heading
    return Lengths(src=counts[keep] + 1, source=f"{source} (paragraph tokens + 1 <eos>)", unit="tokens")
