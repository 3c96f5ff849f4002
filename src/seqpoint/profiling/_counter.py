"""The dispatch mode that counts a training step operator by operator (:func:`make_counter`):
what each operator costs (:class:`Cost`), as ``_counting`` and the exact totals' fit
(``_fit``, from a :class:`TraceRow` per operator) read it. See ``_counting`` for what is counted.

:func:`flop_registry` adds FLOP formulas for the attention kernels ``torch.utils.flop_counter``
does not cover: torch counts the CUDA fused kernels, not those a CPU run meets (the CPU flash
kernel ``_scaled_dot_product_flash_attention_for_cpu`` and its backward, the
``*_fused_attention_overrideable`` pair and ``_native_multi_head_attention``). Without them a
CPU-counted step misses ``4·B·H·Tq·Tk·d`` FLOPs per attention forward. The formulas follow
flop_counter's conventions (``sdpa_flop_count``: a multiply-add is 2 FLOPs, softmax not counted,
no causal discount); the registry is built per call, never modifying torch's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from seqpoint.devices import ROOFLINE, Target
from seqpoint.profiling._categories import CATEGORIES, categorize

if TYPE_CHECKING:
    import torch
    from torch._ops import OpOverload, OpOverloadPacket

__all__ = ["Cost", "Counter", "Parts", "TraceRow", "flop_registry", "make_counter", "on_gpu"]

#: Operator overload packet (``torch.ops.aten.<name>``) to its FLOP formula.
Registry = dict["OpOverloadPacket", Callable[..., int]]

#: Functions CUDA autocast runs in the low precision (``bf16``/``fp16``) and in ``fp32`` (its op
#: lists, by the names a forward pass calls them under).
_LOW_OPS = frozenset({"linear", "matmul", "__matmul__", "mm", "bmm", "baddbmm", "addmm", "addbmm", "addmv", "mv",
                      "addr", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                      "lstm", "gru", "rnn_tanh", "rnn_relu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
                      "prelu", "scaled_dot_product_attention"})
_FP32_OPS = frozenset({"softmax", "log_softmax", "layer_norm", "group_norm", "cross_entropy_loss", "nll_loss",
                       "ctc_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "binary_cross_entropy_with_logits",
                       "kl_div", "pow", "exp", "expm1", "log", "log1p", "log2", "log10", "rsqrt", "reciprocal", "acos",
                       "asin", "cosh", "sinh", "tan", "erfinv", "softplus", "sum", "prod", "cumsum", "cumprod", "norm",
                       "logsumexp", "dist", "cdist", "renorm"})

#: ``scaled_dot_product_attention``'s arguments, in order.
_SDPA_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")


def _shape(t: torch.Tensor) -> tuple[int, ...]:
    return tuple(int(v) for v in t.shape)


def _sdpa_forward(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, *args: object, **kwargs: object) -> int:
    """``(q, k, v, ...)`` kernels: flash for CPU, fused overrideable."""
    from torch.utils.flop_counter import sdpa_flop_count

    return int(sdpa_flop_count(_shape(query), _shape(key), _shape(value)))


def _sdpa_backward(grad_out: torch.Tensor, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                   *args: object, **kwargs: object) -> int:
    """``(grad_out, q, k, v, ...)`` backward kernels."""
    from torch.utils.flop_counter import sdpa_backward_flop_count

    return int(sdpa_backward_flop_count(_shape(grad_out), _shape(query), _shape(key), _shape(value)))


def _native_mha(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, embed_dim: int, num_head: int,
                *args: object, **kwargs: object) -> int:
    """Inference fast path of ``nn.MultiheadAttention`` (``query (B, Tq, E)``, ``key``/``value
    (B, Tk, E)``): query, key and value projections, attention over all heads, output projection."""
    q, k = _shape(query), _shape(key)
    b, tq, e = (q[0], q[1], q[2]) if len(q) == 3 else (1, q[0], q[1])
    tk = k[1] if len(k) == 3 else k[0]
    return 2 * b * tq * e * e + 4 * b * tk * e * e + 4 * b * tq * tk * e + 2 * b * tq * e * e


def flop_registry() -> Registry:
    """Operator overload packet → FLOP formula: torch's registry plus seqpoint's own.

    Formulas take the operator's arguments (tensors, not shapes) and ``out_val``, as
    torch's registered (shape-wrapped) formulas do. torch's own entry wins where both exist.
    """
    import torch
    from torch.utils.flop_counter import flop_registry as torch_registry

    aten = torch.ops.aten
    wanted: dict[str, Callable[..., int]] = {
        "_scaled_dot_product_flash_attention_for_cpu": _sdpa_forward,
        "_scaled_dot_product_flash_attention_for_cpu_backward": _sdpa_backward,
        "_scaled_dot_product_fused_attention_overrideable": _sdpa_forward,
        "_scaled_dot_product_fused_attention_overrideable_backward": _sdpa_backward,
        "_native_multi_head_attention": _native_mha,
    }
    # An older or newer torch may lack a kernel: only the ones it has are registered.
    merged: Registry = {getattr(aten, name): fn for name, fn in wanted.items() if hasattr(aten, name)}
    merged.update(torch_registry)
    return merged


@dataclasses.dataclass
class Cost:
    """Additive cost of a run of operators: ``flops`` (a multiply-add is 2), ``bytes`` (read plus
    written, summed over operators), ``ops`` (operators executed, views and allocations excluded);
    ``times``, device time in seconds by metric stem (``roofline_<gpu>``, the bound, and
    ``model_<gpu>``); ``category_flops``, ``category_bytes`` and ``category_kernels`` (an operator
    each, none for one fused into another's) by operation category; ``category_times``,
    ``<stem>/<category>`` to seconds for the device times a count splits (``count_step(split=)``)."""

    flops: float = 0.0
    bytes: float = 0.0
    ops: float = 0.0
    times: dict[str, float] = dataclasses.field(default_factory=dict)
    category_flops: dict[str, float] = dataclasses.field(default_factory=dict)
    category_bytes: dict[str, float] = dataclasses.field(default_factory=dict)
    category_kernels: dict[str, float] = dataclasses.field(default_factory=dict)
    category_times: dict[str, float] = dataclasses.field(default_factory=dict)

    def add(self, other: Cost, scale: float = 1.0) -> None:
        self.flops += scale * other.flops
        self.bytes += scale * other.bytes
        self.ops += scale * other.ops
        for d, o in ((self.times, other.times), (self.category_flops, other.category_flops),
                     (self.category_bytes, other.category_bytes), (self.category_kernels, other.category_kernels),
                     (self.category_times, other.category_times)):
            for k, v in o.items():
                d[k] = d.get(k, 0.0) + scale * v

    def metrics(self) -> dict[str, float]:
        """As Measurement metrics: ``flops``, ``bytes``, ``ops``, ``roofline_<gpu>_s``,
        ``model_<gpu>_s``, ``flops_<category>``, ``bytes_<category>``."""
        out = {"flops": self.flops, "bytes": self.bytes, "ops": self.ops}
        for g, v in sorted(self.times.items()):
            out[f"{g}_s"] = v
        for c in CATEGORIES:
            if self.category_flops.get(c):
                out[f"flops_{c}"] = self.category_flops[c]
            if self.category_bytes.get(c):
                out[f"bytes_{c}"] = self.category_bytes[c]
        return out


#: A block's operators: ``(coefficient, flops, bytes, precision)`` each, or None when unknown.
Parts = tuple[tuple[float, float, float, str | None], ...] | None


@dataclasses.dataclass(frozen=True)
class TraceRow:
    """One operator or memoized block of a traced step (what ``_exact`` fits): its ``label``
    (operator name, or the block's), ``cost`` (a block's already multiplied by ``scale``, the times
    its unit cost was added: a recurrent layer's steps after the first), whether it ``is_op`` (its
    roofline follows from its FLOPs and bytes), ``dims`` (every dimension of the operator's tensors;
    a recurrent block's step count), a block's ``parts`` (:data:`Parts`; its roofline time is
    ``scale * sum(coefficient * max(flops / peak, bytes / bandwidth))``) and the ``precision`` an
    operator with FLOPs runs at (``fp32``, ``tf32``, ``bf16``, ``fp16``)."""

    label: str
    cost: Cost
    is_op: bool
    dims: tuple[int, ...] = ()
    scale: float = 1.0
    parts: Parts = None
    precision: str | None = None


#: Operators that move no data: allocations, views' metadata, size queries.
_SKIP_NAMES = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "lift_fresh",
                         "_unsafe_view", "_local_scalar_dense", "detach", "resize_", "set_", "size", "stride",
                         "sym_size", "sym_stride", "is_contiguous", "numel", "dim", "storage_offset", "sym_numel"})

class Counter(AbstractContextManager[object], Protocol):
    """The dispatch mode :func:`make_counter` builds (its class needs torch at import)."""

    cost: Cost
    targets: dict[str, Target]
    split: frozenset[str]
    trace: list[TraceRow] | None
    context: str | None
    autocast: bool
    cast: dict[object, object]

    def key(self) -> tuple[object, ...]: ...

    def redirect(self, trace: list[TraceRow] | None = None) -> AbstractContextManager[Cost]: ...

    def add_block(self, label: str, cost: Cost, scale: float = 1.0, *, dims: tuple[int, ...] = (),
                  parts: Parts = None) -> None: ...


def make_counter(targets: dict[str, Target], dtype: str = "fp32") -> Counter:
    """A dispatch mode that adds every operator's cost to its ``cost``; with ``trace`` set to
    a list, every operator and memoized block (a recurrent layer, the optimizer step) is also
    appended as a :class:`TraceRow`, what ``_exact`` fits per operator. ``targets`` are the
    devices timed, by metric stem; ``dtype`` the workload's (``run_dtype``)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    registry = flop_registry()
    # TF32 where cuBLAS (matmul flag) or cuDNN (convolutions, RNNs; on by default) use it
    tf32 = (dtype == "tf32" or torch.backends.cuda.matmul.allow_tf32, dtype == "tf32" or torch.backends.cudnn.allow_tf32)
    names = {torch.bfloat16: "bf16", torch.float16: "fp16"}

    class Counter(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.cost = Cost()
            self.targets = targets
            self.split: frozenset[str] = frozenset()
            self.trace: list[TraceRow] | None = None
            self.context: str | None = None  # "rnn" or "optimizer": the category of every operator
            self.autocast = False  # inside the forward pass, where autocast casts
            self.cast: dict[object, object] = {}  # parameters cast in this forward pass (autocast's cache)

        def key(self) -> tuple[object, ...]:
            """What a memoized block's cost depends on beside its shapes."""
            return *sorted(self.targets.items()), *sorted(self.split), self.trace is not None, dtype, tf32

        @contextmanager
        def redirect(self, trace: list[TraceRow] | None = None) -> Iterator[Cost]:
            """Count into a fresh cost (and ``trace``) for the block's duration."""
            saved, saved_trace, saved_cast = self.cost, self.trace, self.cast
            self.cost, self.trace, self.cast = Cost(), trace, {}
            try:
                yield self.cost
            finally:
                self.cost, self.trace, self.cast = saved, saved_trace, saved_cast

        def add_block(self, label: str, cost: Cost, scale: float = 1.0, *, dims: tuple[int, ...] = (),
                      parts: Parts = None) -> None:
            """Add a memoized block's cost (``scale`` times); ``dims`` and ``parts`` as in
            :class:`TraceRow`."""
            self.cost.add(cost, scale)
            if self.trace is not None:
                row = Cost()
                row.add(cost, scale)
                self.trace.append(TraceRow(label, row, False, dims, scale, parts))

        def _add(self, name: str, flops: float, nbytes: float, dims: tuple[int, ...], precision: str | None,
                 shape: tuple[int, int] | None = None) -> None:
            c = self.cost
            cat = self.context or categorize(name)
            fused = self.context == "rnn" and not flops  # cuDNN runs it inside a product's kernel
            kernels = 0.0 if fused else 1.0
            c.flops += flops
            c.bytes += nbytes
            c.ops += 1
            for d, v in ((c.category_flops, flops), (c.category_bytes, nbytes), (c.category_kernels, kernels)):
                d[cat] = d.get(cat, 0.0) + v
            for g, target in self.targets.items():
                if fused and target.model is not ROOFLINE:
                    continue
                t = target.seconds(precision, flops, nbytes, kernels, shape)
                c.times[g] = c.times.get(g, 0.0) + t
                if g in self.split:
                    c.category_times[f"{g}/{cat}"] = c.category_times.get(f"{g}/{cat}", 0.0) + t
            if self.trace is not None:
                self.trace.append(TraceRow(name, Cost(flops=flops, bytes=float(nbytes), ops=1.0,
                                                      category_flops={cat: flops}, category_bytes={cat: float(nbytes)},
                                                      category_kernels={cat: kernels}), True, dims,
                                           precision=precision))

        def __torch_dispatch__(
            self, func: OpOverload, types: object, args: tuple[object, ...] = (),
            kwargs: dict[str, object] | None = None,
        ) -> object:
            kwargs = kwargs or {}
            name = func._overloadpacket.__name__
            out = func(*args, **kwargs)
            if func.is_view or name in _SKIP_NAMES:
                return out
            packet = func._overloadpacket
            flops = float(registry[packet](*args, **kwargs, out_val=out)) if packet in registry else 0.0
            tensors = [t for t in tree_leaves((args, kwargs, out)) if isinstance(t, torch.Tensor)]
            precision = shape = None
            if flops:
                dt = next((t.dtype for t in tensors if t.is_floating_point()), torch.float32)
                cudnn = self.context == "rnn" or categorize(name) == "convolution"
                precision = names.get(dt) or ("tf32" if tf32[cudnn] else "fp32")
                first = next(iter(tree_leaves(out)), None)
                if isinstance(first, torch.Tensor) and first.dim() >= 2 and categorize(name) != "convolution":
                    shape = (int(first.shape[-2]), int(first.shape[-1]))
            self._add(name, flops, sum(t.numel() * t.element_size() for t in tensors),
                      tuple(int(d) for t in tensors for d in t.shape), precision, shape)
            return out

    return Counter()


def on_gpu(counter: Counter, dtype: str) -> AbstractContextManager[object]:
    """A function mode that makes a meta-device step run as on a GPU: autocast's casts inside
    the forward pass (``counter.autocast``) for a ``bf16``/``fp16`` ``dtype`` (the meta device
    has no autocast), each cast a counted copy (a parameter's once per forward, as autocast
    caches it); and ``scaled_dot_product_attention`` as the one fused kernel a GPU runs (flash
    attention: its FLOPs, reading q, k, v and writing the output), not the math fallback the
    meta device takes, whose ``L × L`` scores no GPU writes."""
    import torch
    from torch.overrides import TorchFunctionMode
    from torch.utils._pytree import tree_map

    sdpa = torch.nn.functional.scaled_dot_product_attention
    fused = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    low = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype)

    def cast(t: object, to: torch.dtype) -> object:
        if not (isinstance(t, torch.Tensor) and t.is_floating_point() and t.dtype != to):
            return t
        if not (t.requires_grad and t.grad_fn is None):
            return t.to(to)
        key = (id(t), to)
        if key not in counter.cast:
            counter.cast[key] = t.to(to)
        return counter.cast[key]

    class OnGPU(TorchFunctionMode):
        def __torch_function__(self, func: Callable[..., object], types: object, args: tuple[object, ...] = (),
                               kwargs: dict[str, object] | None = None) -> object:
            kwargs = kwargs or {}
            name = getattr(func, "__name__", "")
            if counter.autocast and low is not None and (name in _LOW_OPS or name in _FP32_OPS):
                to = low if name in _LOW_OPS else torch.float32
                args, kwargs = tree_map(lambda t: cast(t, to), (args, kwargs))
            if func is sdpa:
                a: dict[str, Any] = {**dict(zip(_SDPA_ARGS, args, strict=False)), **kwargs}
                q, k = a["query"], a["key"]
                if not a.get("enable_gqa") and q.dim() == 4 and q.shape[1] == k.shape[1]:  # not grouped-query
                    return fused(q, k, a["value"], float(a.get("dropout_p") or 0.0), bool(a.get("is_causal")),
                                 attn_mask=a.get("attn_mask"), scale=a.get("scale"))[0]
            return func(*args, **kwargs)

    return OnGPU()
