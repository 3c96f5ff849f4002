"""Deterministic cost of one training step without arithmetic: FLOPs, bytes, op counts,
roofline times.

The step runs on the meta device under a dispatch mode that sees every ATen operator after
autograd: FLOPs from ``torch.utils.flop_counter``'s formulas; bytes are what each operator
reads and writes (views and allocations move nothing); an operator's roofline time on a GPU
is ``max(flops / peak, bytes / bandwidth)``. A recurrent layer over ``T`` steps costs
exactly ``c(1) + (T - 1) (c(2) - c(1))`` from two short runs; the optimizer step, the same
whatever the signature, is counted once per parameter set.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Protocol

from seqpoint.profiling._categories import CATEGORIES, categorize
from seqpoint.profiling._gpus import GPU_SPECS, resolve_device
from seqpoint.profiling._probe import cpu_roofline
from seqpoint.profiling._state import meta_clone, state_of
from seqpoint.workloads import BatchShape, Signature, TorchWorkload, Workload

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch._ops import OpOverload
    from torch.library import Library

__all__ = ["Cost", "Peak", "TraceRow", "count_point", "count_step", "device_peaks", "roofline_peaks"]

#: A roofline device: ``(peak FLOP/s, bytes/s)``.
Peak = tuple[float, float]


@dataclasses.dataclass
class Cost:
    """Additive cost of a run of operators."""

    flops: float = 0.0
    """Floating-point operations (a multiply-add is 2)."""
    bytes: float = 0.0
    """Bytes read plus bytes written, summed over operators."""
    ops: float = 0.0
    """Operators executed (views and allocations excluded)."""
    roofline: dict[str, float] = dataclasses.field(default_factory=dict)
    """GPU name to roofline seconds."""
    category_flops: dict[str, float] = dataclasses.field(default_factory=dict)
    """Operation category to FLOPs."""
    category_bytes: dict[str, float] = dataclasses.field(default_factory=dict)
    """Operation category to bytes."""
    category_roofline: dict[str, float] = dataclasses.field(default_factory=dict)
    """``<gpu>/<category>`` to roofline seconds, for the GPUs a count splits (``count_step(split=)``)."""

    def add(self, other: Cost, scale: float = 1.0) -> None:
        self.flops += scale * other.flops
        self.bytes += scale * other.bytes
        self.ops += scale * other.ops
        for d, o in ((self.roofline, other.roofline), (self.category_flops, other.category_flops),
                     (self.category_bytes, other.category_bytes),
                     (self.category_roofline, other.category_roofline)):
            for k, v in o.items():
                d[k] = d.get(k, 0.0) + scale * v

    def metrics(self) -> dict[str, float]:
        """As Measurement metrics: ``flops``, ``bytes``, ``ops``, ``roofline_<gpu>_s``,
        ``flops_<category>``, ``bytes_<category>``."""
        out = {"flops": self.flops, "bytes": self.bytes, "ops": self.ops}
        for g, v in sorted(self.roofline.items()):
            out[f"roofline_{g}_s"] = v
        for c in CATEGORIES:
            if self.category_flops.get(c):
                out[f"flops_{c}"] = self.category_flops[c]
            if self.category_bytes.get(c):
                out[f"bytes_{c}"] = self.category_bytes[c]
        return out


@dataclasses.dataclass(frozen=True)
class TraceRow:
    """One operator or memoized block of a traced step (what ``_exact`` fits)."""

    label: str
    """Operator name, or the block's label."""
    cost: Cost
    """Its cost (a block's: already multiplied by :attr:`scale`)."""
    is_op: bool
    """An operator (its roofline follows from its FLOPs and bytes), not a block."""
    dims: tuple[int, ...] = ()
    """Every dimension of the operator's tensors; a recurrent block's step count."""
    scale: float = 1.0
    """Times a block's unit cost was added (a recurrent layer's steps after the first)."""
    parts: tuple[tuple[float, float, float], ...] | None = None
    """A block's operators as ``(coefficient, flops, bytes)``: its roofline time is
    ``scale * sum(coefficient * max(flops / peak, bytes / bandwidth))``; None when unknown."""


_Parts = tuple[tuple[float, float, float], ...] | None

#: A recurrent layer's cost by (layer, batch, width, dtype, ...), kept per model for as long
#: as the model lives: the same for every signature of that batch, and the slowest part of
#: counting a step (two runs of the layer per call).
_rnn_memo: weakref.WeakKeyDictionary[nn.Module, dict[tuple[object, ...], tuple[Cost, Cost, _Parts, _Parts]]] = (
    weakref.WeakKeyDictionary())

#: Operators that move no data: allocations, views' metadata, size queries.
_SKIP_NAMES = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "lift_fresh",
    "_local_scalar_dense", "detach", "resize_", "set_", "size", "stride", "sym_size", "sym_stride",
    "is_contiguous", "numel", "dim", "storage_offset", "sym_numel",
})

# Process-wide on purpose: a torch.library registration changes the ATen dispatcher for
# the whole process, so it is made once (under a lock) and kept alive. The kernels are pure
# shape functions: no campaign can observe another through them.
_lock = threading.Lock()
_meta_lib: Library | None = None


def _register_missing_meta_kernels() -> None:
    """Shape functions for operators that lack a meta kernel in torch (CTC loss)."""
    global _meta_lib
    with _lock:
        if _meta_lib is not None:
            return
        import torch

        lib = torch.library.Library("aten", "IMPL")

        def ctc(log_probs: torch.Tensor, targets: torch.Tensor, *a: object) -> tuple[torch.Tensor, torch.Tensor]:
            t, b = log_probs.shape[0], log_probs.shape[1]
            s = targets.shape[-1] if targets.dim() == 2 else max(1, targets.shape[0] // max(1, b))
            return log_probs.new_empty((b,)), log_probs.new_empty((b, t, 2 * s + 1))

        def ctc_backward(grad: torch.Tensor, log_probs: torch.Tensor, *a: object) -> torch.Tensor:
            return log_probs.new_empty(log_probs.shape)

        for overload, fn in (
            ("_ctc_loss", ctc),
            ("_ctc_loss.Tensor", ctc),
            ("_ctc_loss_backward", ctc_backward),
            ("_ctc_loss_backward.Tensor", ctc_backward),
        ):
            # a future torch may ship its own meta kernel
            with contextlib.suppress(RuntimeError):
                lib.impl(overload, fn, "Meta")
        _meta_lib = lib  # keep the registrations alive


class _Counter(AbstractContextManager[object], Protocol):
    """The dispatch mode :func:`_make_counter` builds (its class needs torch at import)."""

    cost: Cost
    peaks: dict[str, Peak]
    split: frozenset[str]
    trace: list[TraceRow] | None

    def redirect(self, trace: list[TraceRow] | None = None) -> AbstractContextManager[Cost]: ...

    def add_block(self, label: str, cost: Cost, scale: float = 1.0, *, dims: tuple[int, ...] = (),
                  parts: tuple[tuple[float, float, float], ...] | None = None) -> None: ...


def roofline_peaks(workload: Workload, devices: Mapping[str, Peak] | None) -> dict[str, Peak]:
    """Every GPU of ``GPU_SPECS`` at the workload's dtype, and ``devices``, by name."""
    dtype = _dtype(workload)
    return {**{g: (s.flops_for(dtype), s.bandwidth) for g, s in GPU_SPECS.items()}, **(devices or {})}


def _dtype(workload: Workload) -> str:
    dtype = getattr(getattr(workload, "config", None), "dtype", "fp32")
    return dtype if isinstance(dtype, str) else "fp32"


def device_peaks(workload: Workload, devices: Iterable[str]) -> dict[str, Peak]:
    """``(peak FLOP/s, bytes/s)`` of each of ``devices`` (``cpu``: this process's CPU threads,
    measured by :func:`cpu_roofline`; a shipped GPU's key; or a device file, a path ending
    ``.toml``), by key, at the workload's dtype."""
    peaks = {}
    for d in devices:
        if d == "cpu":
            peaks["cpu"] = cpu_roofline()
            continue
        key, spec = resolve_device(d)
        peaks[key] = (spec.flops_for(_dtype(workload)), spec.bandwidth)
    return peaks


def _make_counter(peaks: dict[str, Peak]) -> _Counter:
    """A dispatch mode that adds every operator's cost to its ``cost``; with ``trace`` set to
    a list, every operator and memoized block (a recurrent layer, the optimizer step) is also
    appended as a :class:`TraceRow`, what ``_exact`` fits per operator. ``peaks`` are
    the roofline devices (:func:`roofline_peaks`)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    from seqpoint.profiling._attention_flops import flop_registry

    registry = flop_registry()

    class Counter(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.cost = Cost()
            self.peaks = peaks
            self.split: frozenset[str] = frozenset()
            self.trace: list[TraceRow] | None = None

        @contextmanager
        def redirect(self, trace: list[TraceRow] | None = None) -> Iterator[Cost]:
            """Count into a fresh cost (and ``trace``) for the block's duration."""
            saved, saved_trace = self.cost, self.trace
            self.cost, self.trace = Cost(), trace
            try:
                yield self.cost
            finally:
                self.cost, self.trace = saved, saved_trace

        def add_block(self, label: str, cost: Cost, scale: float = 1.0, *, dims: tuple[int, ...] = (),
                      parts: tuple[tuple[float, float, float], ...] | None = None) -> None:
            """Add a memoized block's cost (``scale`` times); ``dims`` and ``parts`` as in
            :class:`TraceRow`."""
            self.cost.add(cost, scale)
            if self.trace is not None:
                row = Cost()
                row.add(cost, scale)
                self.trace.append(TraceRow(label, row, False, dims, scale, parts))

        def __torch_dispatch__(
            self, func: OpOverload, types: object, args: tuple[object, ...] = (),
            kwargs: dict[str, object] | None = None,
        ) -> object:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = func._overloadpacket.__name__
            if func.is_view or name in _SKIP_NAMES:
                return out
            packet = func._overloadpacket
            flops = float(registry[packet](*args, **kwargs, out_val=out)) if packet in registry else 0.0
            tensors = [t for t in tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor)]
            nbytes = sum(t.numel() * t.element_size() for t in tensors)
            c = self.cost
            cat = categorize(name)
            c.flops += flops
            c.bytes += nbytes
            c.ops += 1
            c.category_flops[cat] = c.category_flops.get(cat, 0.0) + flops
            c.category_bytes[cat] = c.category_bytes.get(cat, 0.0) + nbytes
            for g, (pf, bw) in self.peaks.items():
                t = max(flops / pf, nbytes / bw)
                c.roofline[g] = c.roofline.get(g, 0.0) + t
                if g in self.split:
                    key = f"{g}/{cat}"
                    c.category_roofline[key] = c.category_roofline.get(key, 0.0) + t
            if self.trace is not None:
                self.trace.append(TraceRow(name, Cost(flops=flops, bytes=float(nbytes), ops=1.0,
                                                      category_flops={cat: flops},
                                                      category_bytes={cat: float(nbytes)}), True,
                                           tuple(int(d) for t in tensors for d in t.shape)))
            return out

    return Counter()


def _patch_rnns(model: nn.Module, counter: _Counter) -> Callable[[], None]:
    """Route every recurrent layer of ``model`` through the affine-in-length shortcut."""
    import torch
    from torch import nn

    memo = _rnn_memo.setdefault(model, {})
    patched: list[nn.Module] = []

    class StandIn(torch.autograd.Function):
        @staticmethod
        def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor,  # type: ignore[override]
                    out_shape: tuple[int, ...], *params: torch.Tensor) -> torch.Tensor:
            ctx.shapes = (x.shape, x.dtype, [(p.shape, p.dtype) for p in params])  # type: ignore[attr-defined]
            return x.new_empty(out_shape)

        @staticmethod
        def backward(ctx: torch.autograd.function.FunctionCtx,  # type: ignore[override]
                     grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
            xs, xd, ps = ctx.shapes  # type: ignore[attr-defined]
            return grad.new_empty(xs, dtype=xd), None, *(grad.new_empty(s, dtype=d) for s, d in ps)

    def measure(
        m: nn.RNNBase, orig: Callable[..., tuple[torch.Tensor, object]], steps: int, batch: int, feat: int,
        dtype: torch.dtype,
    ) -> tuple[Cost, list[TraceRow] | None]:
        shape = (batch, steps, feat) if m.batch_first else (steps, batch, feat)
        saved = [p.grad for p in m.parameters()]
        for p in m.parameters():
            p.grad = None
        x = torch.empty(shape, device="meta", dtype=dtype, requires_grad=True)
        # A traced step keeps the block's operators: its roofline is theirs, summed.
        ops: list[TraceRow] | None = [] if counter.trace is not None else None
        with counter.redirect(ops) as cost:
            y, _ = orig(x)
            torch.autograd.backward([y], [torch.empty_like(y)])
        for p, g in zip(m.parameters(), saved, strict=True):
            p.grad = g
        return cost, ops

    def parts(*runs: tuple[float, list[TraceRow] | None]) -> _Parts:
        rows: list[tuple[float, float, float]] = []
        for coef, ops in runs:
            if ops is None or not all(r.is_op for r in ops):
                return None  # not traced, or a nested block: its roofline is fitted as is
            rows += [(coef, r.cost.flops, r.cost.bytes) for r in ops]
        return tuple(rows)

    for module in model.modules():
        if not isinstance(module, nn.RNNBase):
            continue
        orig = module.forward

        def forward(x: torch.Tensor, hx: object = None, *, _m: nn.RNNBase = module,
                    _orig: Callable[..., tuple[torch.Tensor, object]] = orig) -> object:
            if hx is not None or not isinstance(x, torch.Tensor) or x.dim() != 3:
                return _orig(x, hx)
            steps = x.shape[1] if _m.batch_first else x.shape[0]
            batch = x.shape[0] if _m.batch_first else x.shape[1]
            key = (id(_m), batch, x.shape[2], x.dtype, x.requires_grad,
                   # a counter with other roofline devices needs their times; a traced one the parts
                   *sorted(counter.peaks.items()), *sorted(counter.split), counter.trace is not None)
            if key not in memo:
                c1, ops1 = measure(_m, _orig, 1, batch, x.shape[2], x.dtype)
                c2, ops2 = measure(_m, _orig, 2, batch, x.shape[2], x.dtype)
                c2.add(c1, -1.0)  # the cost of one more step
                memo[key] = (c1, c2, parts((1.0, ops1)), parts((1.0, ops2), (-1.0, ops1)))
            first, per_step, first_parts, step_parts = memo[key]
            counter.add_block(f"rnn{id(_m)}.first", first, dims=(int(steps),), parts=first_parts)
            counter.add_block(f"rnn{id(_m)}.steps", per_step, float(steps - 1), dims=(int(steps),),
                              parts=step_parts)
            d = 2 if _m.bidirectional else 1
            h_out = _m.proj_size if getattr(_m, "proj_size", 0) else _m.hidden_size
            out_shape = (*x.shape[:2], d * h_out)
            params = [p for p in _m.parameters() if p.requires_grad]
            y = StandIn.apply(x, out_shape, *params)
            h = x.new_empty((_m.num_layers * d, batch, h_out))
            if isinstance(_m, nn.LSTM):
                return y, (h, x.new_empty((_m.num_layers * d, batch, _m.hidden_size)))
            return y, h

        module.forward = forward  # type: ignore[method-assign]
        patched.append(module)

    def undo() -> None:
        for m in patched:
            del m.forward

    return undo


def _memoize_optimizer(clone: TorchWorkload, counter: _Counter) -> Callable[[], None]:
    """Count the optimizer step once per set of parameters with gradients and reuse it: the
    same whatever the signature, and the slowest part of a meta-device run."""
    opt = clone.optimizer
    kept = state_of(clone)
    memo: dict[tuple[object, ...], Cost] = kept.optimizer_cost if kept is not None else {}
    real_step: Callable[..., object] = opt.step

    def step(*args: object, **kwargs: object) -> None:
        key = (*(id(p) for g in opt.param_groups for p in g["params"] if p.grad is not None),
               # a counter with other roofline devices needs their times too
               *sorted(counter.peaks.items()), *sorted(counter.split))
        if key not in memo:
            with counter.redirect() as cost:
                real_step(*args, **kwargs)
            memo[key] = cost
        counter.add_block("optimizer", memo[key])
        return None

    opt.step = step  # type: ignore[method-assign,assignment]

    def undo() -> None:
        del opt.step

    return undo


def count_step(
    workload: Workload, signature: Signature, *, rnn_shortcut: bool = True,
    devices: Mapping[str, Peak] | None = None, split: Iterable[str] = (),
    trace: list[TraceRow] | None = None, shape: BatchShape | None = None,
) -> Cost:
    """Cost of one training step of ``workload`` on ``signature`` (see :func:`count_point`);
    ``shape`` is the point's real batch, for a workload that takes one. ``devices`` and
    ``trace`` as for ``_make_counter``; the roofline of the devices in ``split`` is also
    kept per operation category (:attr:`Cost.category_roofline`)."""
    _register_missing_meta_kernels()
    peaks, split = roofline_peaks(workload, devices), frozenset(split)
    counter = _make_counter(peaks)
    counter.split, counter.trace = split, trace
    batch_of = signature if shape is None else shape
    traced = 0 if trace is None else len(trace)
    clone = meta_clone(workload) if isinstance(workload, TorchWorkload) else None
    if clone is not None:
        undo_rnn = _patch_rnns(clone.model, counter) if rnn_shortcut else (lambda: None)
        undo_opt = _memoize_optimizer(clone, counter)
        try:
            meta_batch = clone.make_batch(batch_of)  # type: ignore[arg-type]
            with counter:
                clone.step(meta_batch)
            return counter.cost
        except (RuntimeError, NotImplementedError) as exc:
            # A model with data-dependent control flow (transformers' masks call .item())
            # cannot run on the meta device: it is counted on a real step below.
            if "meta" not in str(exc):
                raise
            if (kept := state_of(workload)) is not None:
                kept.meta_fails = True
            if trace is not None:
                del trace[traced:]  # the failed attempt's operators
            counter = _make_counter(peaks)
            counter.split, counter.trace = split, trace
        finally:
            undo_rnn()
            undo_opt()
    # A user workload, or one that cannot run on the meta device: count one real step
    # (after one uncounted step that lets a lazily built optimizer state exist).
    batch = workload.make_batch(batch_of)  # type: ignore[arg-type]
    workload.step(batch)
    with counter:
        workload.step(batch)
    return counter.cost


def count_point(workload: Workload, signature: Signature, *, shape: BatchShape | None = None,
                devices: Iterable[str] = ()) -> dict[str, float]:
    """Deterministic metrics of one training step, computed without arithmetic.

    Parameters
    ----------
    workload : Workload
        A reference workload (counted on a meta-device clone: no memory, no arithmetic)
        or a user workload (counted on one real step).
    signature : tuple of int
        ``(batch_size, seq_len, tgt_len[, sum_sq_len])``.
    shape : BatchShape, optional
        The point's real per-sequence lengths, for a user workload that takes them.
    devices : iterable of str, optional
        Device files (paths ending ``.toml``, see ``read_device``) to add a roofline time for,
        as ``roofline_<file name>_s``.

    Returns
    -------
    dict of str to float
        ``flops``; ``bytes`` (read + written, unfused); ``ops`` (operators);
        ``roofline_<gpu>_s`` for every GPU in ``GPU_SPECS`` (seconds, at the peak of the
        workload's dtype); ``flops_<category>`` / ``bytes_<category>`` per category.

    Notes
    -----
    Counting follows the operators eager PyTorch runs for the model's CPU/meta path.
    Under ``bf16``/``fp16`` the FLOPs are the same and the roofline uses the tensor-core
    peak, but bytes are counted at the weights' dtype (fp32): meta tensors have no
    autocast, so the byte count is an upper bound for mixed precision.
    """
    metrics = count_step(workload, tuple(int(v) for v in signature), shape=shape,
                         devices=device_peaks(workload, devices)).metrics()
    return {k: float(v) for k, v in metrics.items() if not (isinstance(v, float) and math.isnan(v))}
