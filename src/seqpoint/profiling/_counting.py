"""Deterministic cost of one training step without arithmetic: FLOPs, bytes, operators,
kernels, and the step's time on GPUs (the roofline bound and the device model).

The step runs on the meta device under a dispatch mode that sees every ATen operator after
autograd: FLOPs from ``torch.utils.flop_counter``'s formulas; bytes are what each operator
reads and writes (views and allocations move nothing), at the dtype it runs at on a GPU
(``bf16``/``fp16``: autocast's casts are applied, as its op lists say); each operator is one
kernel, at the precision it runs (TF32 where cuBLAS or cuDNN use it), timed on each device by
``seqpoint.devices`` (``max(flops / peak, bytes / bandwidth)`` for the bound). As on a GPU,
``scaled_dot_product_attention`` is one fused operator, and a recurrent layer's pointwise
operators are fused into its matrix products' kernels (cuDNN): the device model charges them
nothing. Operators of a recurrent layer and of the optimizer step are of its category (``rnn``,
``optimizer``), as the measured breakdown has them. A recurrent layer over ``T`` steps costs
exactly ``c(1) + (T - 1) (c(2) - c(1))`` from two short runs; the optimizer step, the same
whatever the signature, is counted once per parameter set.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from seqpoint._signature import Signature
from seqpoint.devices import GPU_SPECS, MODEL, ROOFLINE, Target, resolve_device
from seqpoint.profiling._counter import Cost, Counter, Parts, TraceRow, make_counter, on_gpu
from seqpoint.profiling._state import WorkloadState, meta_clone
from seqpoint.workloads import BatchShape, TorchWorkload, Workload

if TYPE_CHECKING:
    import torch
    from torch import nn
    from torch.library import Library

__all__ = ["Cost", "TraceRow", "category_models", "count_point", "count_step", "cpu_roofline", "device_targets",
           "roofline_targets", "run_dtype"]

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

        for overload, fn in (("_ctc_loss", ctc), ("_ctc_loss.Tensor", ctc), ("_ctc_loss_backward", ctc_backward),
                             ("_ctc_loss_backward.Tensor", ctc_backward)):
            with contextlib.suppress(RuntimeError):  # a future torch may ship its own meta kernel
                lib.impl(overload, fn, "Meta")
        _meta_lib = lib  # keep the registrations alive


def run_dtype(workload: Workload) -> str:
    """The precision a workload's step runs at: its config's ``dtype`` (``fp32``, ``tf32``,
    ``bf16``, ``fp16``), or a Hugging Face Trainer's ``bf16``/``fp16`` flags."""
    config = getattr(workload, "config", None)
    if isinstance(config, Mapping):
        return next((d for d in ("bf16", "fp16", "tf32") if config.get(d)), "fp32")
    dtype = getattr(config, "dtype", "fp32")
    return dtype if isinstance(dtype, str) else "fp32"


def roofline_targets(workload: Workload, devices: Mapping[str, Target] | None) -> dict[str, Target]:
    """The roofline bound of every GPU of ``GPU_SPECS`` that runs the workload's dtype, and
    ``devices``, by key."""
    dtype = run_dtype(workload)
    return {**{g: Target.of(s) for g, s in GPU_SPECS.items() if s.supports(dtype)}, **(devices or {})}


def _two_figures(x: float) -> float:
    if x <= 0 or not math.isfinite(x):
        return x
    e = math.floor(math.log10(x)) - 1
    return round(x / 10**e) * 10**e


def cpu_roofline(*, repeats: int = 5) -> tuple[float, float]:
    """``(peak FLOP/s, bandwidth bytes/s)`` of this process's CPU threads, for a roofline: the
    fastest (least disturbed) of ``repeats`` ``1024×1024`` fp32 matrix products and copies of a
    64 MiB tensor, rounded to two significant figures so that the same machine gives the same
    cost proxy from run to run."""
    import torch

    n = 1024
    a, b = torch.randn(n, n), torch.randn(n, n)
    src = torch.empty(16 * 1024 * 1024)  # 64 MiB of fp32
    dst = torch.empty_like(src)
    torch.mm(a, b)
    dst.copy_(src)
    best_mm = best_copy = math.inf
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best_mm = min(best_mm, time.perf_counter() - t0)
        t0 = time.perf_counter()
        dst.copy_(src)
        best_copy = min(best_copy, time.perf_counter() - t0)
    flops = 2.0 * n**3 / best_mm
    bandwidth = 2.0 * src.numel() * src.element_size() / best_copy
    return _two_figures(flops), _two_figures(bandwidth)


def device_targets(workload: Workload, devices: Iterable[str], *, model: bool = False) -> dict[str, Target]:
    """Each of ``devices`` (``cpu``: this process's CPU threads, measured by
    :func:`cpu_roofline`, always their bound; a shipped GPU's key; or a device file, a path
    ending ``.toml``) as the roofline bound, or with ``model`` the device model, by key.
    ConfigError for a GPU that lacks the workload's dtype (bf16 on a V100)."""
    dtype = run_dtype(workload)
    out = {}
    for d in devices:
        if d == "cpu":
            out["cpu"] = Target.flat(*cpu_roofline())
            continue
        key, spec = resolve_device(d)
        spec.peak(dtype)  # refuses bf16 on a GPU without it
        out[key] = Target.of(spec, MODEL if model else ROOFLINE)
    return out


def _patch_rnns(model: nn.Module, counter: Counter,
                memo: dict[tuple[object, ...], tuple[Cost, Cost, Parts, Parts]]) -> Callable[[], None]:
    """Route every recurrent layer of ``model`` through the affine-in-length shortcut."""
    import torch
    from torch import nn

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
        context, counter.context = counter.context, "rnn"
        try:
            with counter.redirect(ops) as cost:
                y, _ = orig(x)
                torch.autograd.backward([y], [torch.empty_like(y)])
        finally:
            counter.context = context
        for p, g in zip(m.parameters(), saved, strict=True):
            p.grad = g
        return cost, ops

    def parts(*runs: tuple[float, list[TraceRow] | None]) -> Parts:
        rows: list[tuple[float, float, float, str | None]] = []
        for coef, ops in runs:
            if ops is None or not all(r.is_op for r in ops):
                return None  # not traced, or a nested block: its roofline is fitted as is
            rows += [(coef, r.cost.flops, r.cost.bytes, r.precision) for r in ops]
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
            # a counter with other devices needs their times; a traced one the parts
            key = (id(_m), batch, x.shape[2], x.dtype, x.requires_grad, counter.autocast, *counter.key())
            if key not in memo:
                c1, ops1 = measure(_m, _orig, 1, batch, x.shape[2], x.dtype)
                c2, ops2 = measure(_m, _orig, 2, batch, x.shape[2], x.dtype)
                c2.add(c1, -1.0)  # the cost of one more step
                memo[key] = (c1, c2, parts((1.0, ops1)), parts((1.0, ops2), (-1.0, ops1)))
            first, per_step, first_parts, step_parts = memo[key]
            counter.add_block(f"rnn{id(_m)}.first", first, dims=(int(steps),), parts=first_parts)
            counter.add_block(f"rnn{id(_m)}.steps", per_step, float(steps - 1), dims=(int(steps),), parts=step_parts)
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


def _scope(clone: TorchWorkload, counter: Counter, memo: dict[tuple[object, ...], Cost]) -> Callable[[], None]:
    """Count the optimizer step once per set of parameters with gradients and reuse it (the
    same whatever the signature, and the slowest part of a meta-device run), its operators
    of category ``optimizer``; mark the forward pass (``loss``), where autocast casts."""
    opt = clone.optimizer
    real_step: Callable[..., object] = opt.step
    real_loss = clone.loss

    def step(*args: object, **kwargs: object) -> None:
        key = (*(id(p) for g in opt.param_groups for p in g["params"] if p.grad is not None), *counter.key())
        if key not in memo:
            counter.context = "optimizer"
            try:
                with counter.redirect() as cost:
                    real_step(*args, **kwargs)
            finally:
                counter.context = None
            memo[key] = cost
        counter.add_block("optimizer", memo[key])

    def loss(batch: dict[str, torch.Tensor]) -> torch.Tensor:
        import torch

        counter.autocast, counter.cast = True, {}
        # The meta device ignores a CPU autocast; torch's own checks (nn.LSTM's input dtype) then
        # allow the mixed dtypes the counter's emulated autocast makes.
        low = run_dtype(clone) in ("bf16", "fp16")
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=low):
                return real_loss(batch)
        finally:
            counter.autocast = False

    opt.step = step  # type: ignore[method-assign,assignment]
    clone.loss = loss  # type: ignore[method-assign]

    def undo() -> None:
        del opt.step, clone.loss

    return undo


def count_step(
    workload: Workload, signature: Signature, *, rnn_shortcut: bool = True, devices: Mapping[str, Target] | None = None,
    models: Mapping[str, Target] | None = None, split: Iterable[str] = (), trace: list[TraceRow] | None = None,
    shape: BatchShape | None = None, state: WorkloadState | None = None,
) -> Cost:
    """Cost of one training step of ``workload`` on ``signature`` (see :func:`count_point`);
    ``shape`` is the point's real batch, for a workload that takes one. ``devices`` are extra
    roofline devices (beside every shipped GPU), ``models`` the devices the device model times
    (``roofline_<key>`` and ``model_<key>`` in :attr:`Cost.times`); the times of the stems in
    ``split`` are also kept per operation category; ``trace`` as for ``make_counter``."""
    _register_missing_meta_kernels()
    targets = {**{f"roofline_{k}": t for k, t in roofline_targets(workload, devices).items()},
               **{f"model_{k}": t for k, t in (models or {}).items()}}
    dtype, split = run_dtype(workload), frozenset(split)

    def new_counter() -> Counter:
        counter = make_counter(targets, dtype)
        counter.split, counter.trace = split, trace
        return counter

    batch_of = signature if shape is None else shape
    traced = 0 if trace is None else len(trace)
    state = state if state is not None else WorkloadState()
    clone = meta_clone(workload, state) if isinstance(workload, TorchWorkload) else None
    counter = new_counter()
    if clone is not None:
        undo_rnn = _patch_rnns(clone.model, counter, state.rnn_costs) if rnn_shortcut else (lambda: None)
        undo_scope = _scope(clone, counter, state.optimizer_cost)
        try:
            meta_batch = clone.make_batch(batch_of)  # type: ignore[arg-type]
            with on_gpu(counter, dtype), counter:
                clone.step(meta_batch)
            return counter.cost
        except (RuntimeError, NotImplementedError) as exc:
            # A model with data-dependent control flow (transformers' masks call .item())
            # cannot run on the meta device: it is counted on a real step below.
            if "meta" not in str(exc):
                raise
            state.meta_fails = True
            if trace is not None:
                del trace[traced:]  # the failed attempt's operators
            counter = new_counter()
        finally:
            undo_rnn()
            undo_scope()
    # A user workload, or one that cannot run on the meta device: count one real step
    # (after one uncounted step that lets a lazily built optimizer state exist); its own
    # autocast, if any, casts for real.
    batch = workload.make_batch(batch_of)  # type: ignore[arg-type]
    workload.step(batch)
    with counter:
        workload.step(batch)
    return counter.cost


def count_point(workload: Workload, signature: Signature, *, shape: BatchShape | None = None,
                devices: Iterable[str] = (), models: Iterable[str] = (),
                state: WorkloadState | None = None) -> dict[str, float]:
    """Deterministic metrics of one training step of ``signature`` (``(batch_size, seq_len,
    tgt_len[, sum_sq_len])``), computed without arithmetic: a reference workload's on a meta-device
    clone (no memory, no arithmetic), a user workload's on one real step (with ``shape``, its real
    lengths, when it takes them). ``state`` (a :class:`~seqpoint.profiling.Profiler`'s) keeps the
    meta-device clone and the optimizer's and recurrent layers' costs between calls.

    ``flops``; ``bytes`` (read + written, unfused, at the dtype each operator runs at); ``ops``
    (operators); ``roofline_<gpu>_s`` for every GPU in ``GPU_SPECS`` that runs the workload's dtype
    (seconds, the bound) and for each device file of ``devices`` (paths ending ``.toml``, see
    ``resolve_device``) as ``roofline_<file name>_s``; ``model_<gpu>_s``, the device model's time on
    each of ``models`` (shipped keys or device files); ``flops_<category>`` / ``bytes_<category>``.
    """
    metrics = count_step(workload, tuple(int(v) for v in signature), shape=shape,
                         devices=device_targets(workload, devices),
                         models=device_targets(workload, models, model=True), state=state).metrics()
    return {k: float(v) for k, v in metrics.items() if not (isinstance(v, float) and math.isnan(v))}


def category_models(workload: Workload, signatures: Iterable[Signature], devices: Mapping[str, Target], *,
                    state: WorkloadState | None = None) -> dict[Signature, dict[str, dict[str, float]]]:
    """Signature → device → category → seconds: the device model's time of the category's
    operators in one counted step of ``workload``, on each of ``devices`` (``device_targets(...,
    model=True)``), what ``seqpoint.projection.project_device`` scales measured category times by."""
    out: dict[Signature, dict[str, dict[str, float]]] = {}
    for sig in signatures:
        cost = count_step(workload, tuple(int(v) for v in sig), models=devices,
                          split=[f"model_{d}" for d in devices], state=state)
        per: dict[str, dict[str, float]] = {d: {} for d in devices}
        for key, seconds in cost.category_times.items():
            stem, category = key.split("/", 1)
            per[stem.removeprefix("model_")][category] = seconds
        out[tuple(sig)] = per
    return out
