"""Length readers for text: tokens per line, whitespace-split or from a real tokenizer."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence, Sized
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from seqpoint._params import bounded, check_params
from seqpoint._signature import IntArray
from seqpoint.exceptions import AdjustedInputWarning, ConfigError, InputError
from seqpoint.traces._files import check_text, normalize_newlines, read_bytes
from seqpoint.traces._lengths import Lengths

__all__ = ["count_whitespace_tokens", "read_parallel_lengths", "read_text_lengths", "split_lines"]

#: Largest ``extra_tokens`` (special tokens added per line); keeps lengths far below int64.
MAX_EXTRA_TOKENS = 1_000_000

#: Bytes per block of the vectorised token counter; bounds its temporary memory (~6x this).
_CHUNK = 1 << 24


def _unicode_space_starts(buf: NDArray[np.uint8]) -> NDArray[np.intp]:
    """Positions of the non-ASCII whitespace ``str.split()`` knows (U+001C..U+001F, U+0085,
    U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 in UTF-8)."""
    nxt, nx2 = np.pad(buf, (0, 1))[1:], np.pad(buf, (0, 2))[2:]  # the next bytes, 0 past the end
    hit = (buf >= 0x1C) & (buf <= 0x1F)
    hit |= (buf == 0xC2) & ((nxt == 0x85) | (nxt == 0xA0))
    hit |= (buf == 0xE1) & (nxt == 0x9A) & (nx2 == 0x80)
    hit |= (buf == 0xE2) & (nxt == 0x80) & ((nx2 <= 0x8A) | (nx2 == 0xA8) | (nx2 == 0xA9) | (nx2 == 0xAF))
    hit |= (buf == 0xE2) & (nxt == 0x81) & (nx2 == 0x9F)
    hit |= (buf == 0xE3) & (nxt == 0x80) & (nx2 == 0x80)
    return np.flatnonzero(hit)


def _count_block(buf: NDArray[np.uint8]) -> IntArray:
    """Whitespace tokens of every ``\\n``-terminated line in ``buf`` (which ends with ``\\n``)."""
    # ASCII whitespace: space, \t, \n, \v, \f, \r.
    ws = (buf == 32) | ((buf >= 9) & (buf <= 13))
    starts = ~ws
    starts[1:] &= ws[:-1]
    token_pos = np.flatnonzero(starts)
    line_end = np.flatnonzero(buf == 10)
    below = np.searchsorted(token_pos, line_end)
    counts = np.diff(below, prepend=0).astype(np.int64)
    # Lines with non-ASCII whitespace are rare: recount just those with str.split().
    odd = _unicode_space_starts(buf)
    if odd.size:
        for line in np.unique(np.searchsorted(line_end, odd)).tolist():
            lo = int(line_end[line - 1]) + 1 if line else 0
            text = buf[lo : int(line_end[line])].tobytes().decode("utf-8", errors="replace")
            counts[line] = len(text.split())
    return counts


def count_whitespace_tokens(data: bytes, *, chunk: int = _CHUNK) -> IntArray:
    """Tokens of ``str.split()`` on every line of UTF-8 ``data`` (a final line without ``\\n``
    counts), shape ``(n_lines,)``: counted on the raw bytes, ``chunk`` bytes of whole lines at a
    time, decoding only lines that hold non-ASCII whitespace."""
    if not data:
        return np.zeros(0, dtype=np.int64)
    if not data.endswith(b"\n"):
        data = data + b"\n"
    out: list[IntArray] = []
    lo, n = 0, len(data)
    while lo < n:
        hi = min(lo + chunk, n)
        if hi < n:
            cut = data.rfind(b"\n", lo, hi)
            hi = cut + 1 if cut >= lo else data.find(b"\n", hi) + 1
        out.append(_count_block(np.frombuffer(data, dtype=np.uint8, count=hi - lo, offset=lo)))
        lo = hi
    return np.concatenate(out)


def split_lines(data: bytes) -> list[str]:
    """Lines of UTF-8 ``data`` (checked by the caller), split at ``\\n``, trailing ``\\r`` removed."""
    lines = data.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [ln[:-1] if ln.endswith("\r") else ln for ln in lines]


def _load_tokenizer(spec: str | Path) -> object:
    path = Path(spec)
    if not path.is_file():
        raise ConfigError(f"Tokenizer file {path} does not exist; give a tokenizer.json or a .model file.")
    if path.suffix == ".model":
        try:
            import sentencepiece as spm
        except ImportError:
            raise ConfigError(f"Reading {path} needs the 'sentencepiece' package: pip install "
                              "sentencepiece.") from None
        return spm.SentencePieceProcessor(model_file=str(path))
    try:
        from tokenizers import Tokenizer
    except ImportError:
        raise ConfigError(f"Reading {path} needs the 'tokenizers' package: pip install tokenizers.") from None
    try:
        return Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception on a bad file
        raise ConfigError(f"{path} is not a Hugging Face tokenizer.json file ({exc}).") from None


def _token_counts(tokenizer: Any, lines: list[str], special: bool) -> IntArray:
    """Tokens of each line under ``tokenizer`` (its special tokens added with ``special``)."""
    if isinstance(tokenizer, (str, Path)):
        tokenizer = _load_tokenizer(tokenizer)
    mod = type(tokenizer).__module__
    encoded: Iterable[Sized]
    if hasattr(tokenizer, "encode_batch") and mod.startswith("tokenizers"):
        encoded = [e.ids for e in tokenizer.encode_batch(lines, add_special_tokens=special)]
    elif mod.startswith("sentencepiece"):
        encoded = tokenizer.encode(lines, add_bos=special, add_eos=special)
    elif callable(tokenizer) and hasattr(tokenizer, "pad_token"):  # a transformers tokenizer
        encoded = tokenizer(lines, add_special_tokens=special)["input_ids"]
    elif callable(tokenizer):
        encoded = [tokenizer(x) for x in lines]
    else:
        raise ConfigError(f"Unsupported tokenizer {type(tokenizer).__name__}: give a tokenizers.Tokenizer, a "
                          "transformers tokenizer, a sentencepiece processor, a path to tokenizer.json or .model, "
                          "or a function mapping a string to a list of tokens.")
    return np.fromiter((len(x) for x in encoded), dtype=np.int64, count=len(lines))


def _line_counts(data: bytes, *, tokenizer: object, add_special_tokens: bool) -> tuple[IntArray, IntArray]:
    """(tokens per line, whitespace tokens per line); the latter marks blank lines."""
    ws = count_whitespace_tokens(data)
    if tokenizer is None:
        return ws, ws
    lines = split_lines(data)
    assert len(lines) == ws.shape[0]
    return _token_counts(tokenizer, lines, add_special_tokens), ws


def _counted(datas: Sequence[bytes], sources: Sequence[str], tokenizers: Sequence[object], *, source: str,
             add_special_tokens: bool, extra_tokens: int, skip_empty: bool) -> list[IntArray]:
    """Tokens (+ ``extra_tokens``) per line of one text, or of line-aligned parallel texts,
    without the lines (pairs) that are empty on any side."""
    check_params("", {"extra_tokens": [bounded(int, 0, MAX_EXTRA_TOKENS)]}, {"extra_tokens": extra_tokens})
    for data, name in zip(datas, sources, strict=True):
        check_text(data, name)
    counted = [_line_counts(normalize_newlines(data), tokenizer=tok, add_special_tokens=add_special_tokens)
               for data, tok in zip(datas, tokenizers, strict=True)]
    n = {c.shape[0] for c, _ in counted}
    if len(n) > 1:
        raise InputError(f"Parallel text is misaligned: {sources[0]} has {counted[0][0].shape[0]} lines but "
                         f"{sources[1]} has {counted[1][0].shape[0]}; line i of the source must translate line "
                         "i of the target.")
    if n == {0}:
        raise InputError(f"{source} holds no lines; give non-empty text.")
    keep = np.ones(n.pop(), dtype=bool)
    for c, ws in counted:
        keep &= c + extra_tokens > 0
        if skip_empty:
            keep &= ws > 0
    n_bad = int((~keep).sum())
    what = "empty" if len(datas) == 1 else "empty-pair"
    if n_bad:
        first = int(np.flatnonzero(~keep)[0]) + 1
        if not skip_empty:
            raise InputError(f"{source} line {first} is {what} (0 tokens); a sample needs length >= 1. "
                             "Remove it, or allow skipping empty lines (skip_empty=True).")
        warnings.warn(f"{source}: dropped {n_bad} {what} line(s) (first: line {first}); real pipelines "
                      "filter them before batching.", AdjustedInputWarning, stacklevel=3)
    if not keep.any():
        raise InputError(f"{source} has only blank lines (on some side); give text with content.")
    return [c[keep] + extra_tokens for c, _ in counted]


def read_text_lengths(path: str | Path, *, tokenizer: object = None, add_special_tokens: bool = True,
                      extra_tokens: int = 0, skip_empty: bool = True) -> Lengths:
    """Tokens per line of a UTF-8 text file, one sample a line (options:
    :func:`~seqpoint.traces.read_lengths`)."""
    source = str(path)
    (src,) = _counted([read_bytes(path, text=True)], [source], [tokenizer], source=source,
                      add_special_tokens=add_special_tokens, extra_tokens=extra_tokens, skip_empty=skip_empty)
    how = "whitespace tokens" if tokenizer is None else "tokenizer tokens"
    plus = f" + {extra_tokens}" if extra_tokens else ""
    return Lengths(src=src, source=f"{source} ({how}{plus} per line)", unit="tokens")


def read_parallel_lengths(src_path: str | Path, tgt_path: str | Path, *, tokenizer: object = None,
                          tgt_tokenizer: object = None, add_special_tokens: bool = True, extra_tokens: int = 0,
                          skip_empty: bool = True, _data: Sequence[bytes] | None = None, _source: str | None = None
                          ) -> Lengths:
    """Token counts of line-aligned parallel text (line i of source translates line i of target);
    ``tgt_tokenizer`` defaults to ``tokenizer`` (options: :func:`~seqpoint.traces.read_lengths`)."""
    source = _source or f"{src_path} + {tgt_path}"
    datas = (read_bytes(src_path), read_bytes(tgt_path)) if _data is None else _data
    src, tgt = _counted(datas, [str(src_path), str(tgt_path)],
                        [tokenizer, tokenizer if tgt_tokenizer is None else tgt_tokenizer], source=source,
                        add_special_tokens=add_special_tokens, extra_tokens=extra_tokens, skip_empty=skip_empty)
    how = "whitespace tokens" if tokenizer is None else "tokenizer tokens"
    return Lengths(src=src, tgt=tgt, source=f"{source} ({how} per line)", unit="tokens")
