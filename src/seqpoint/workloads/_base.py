"""The workload protocol, the common config fields and the machinery every reference
workload shares (device, precision, threads, compilation, micro-batching, optimizer).
Importing this module does not import torch; building a workload does."""

from __future__ import annotations

import contextlib
import dataclasses
import re
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable

from seqpoint._config import to_dict
from seqpoint._params import Boolean, Constraint, Interval, Options, Predicate, Validated
from seqpoint._signature import Signature
from seqpoint.exceptions import ConfigError, InputError, SeqPointWarning

if TYPE_CHECKING:
    import torch

__all__ = ["Signature", "TorchWorkload", "Workload", "WorkloadConfig", "check_signature"]

#: A checked signature: ``(batch_size, seq_len, tgt_len, sum_sq_len or None)``.
Dims = tuple[int, int, int, int | None]

DTYPES = ("fp32", "tf32", "bf16", "fp16")
DEVICES = ("cpu", "cuda")
OPTIMIZERS = ("sgd", "adam", "adamw", "lamb")


@runtime_checkable
class Workload(Protocol):
    """One training step of a model, for any signature.

    A workload is built from a frozen config. ``make_batch`` builds a deterministic batch of the signature's shape;
    ``step`` runs one full training iteration on it (forward, loss, backward, optimizer step) and returns the loss.
    """

    name: str
    config: Any

    def make_batch(self, signature: Signature) -> Any: ...

    def step(self, batch: Any) -> float: ...


@dataclasses.dataclass(frozen=True, kw_only=True)
class WorkloadConfig(Validated):
    """Fields every reference workload shares (subclasses add the model's own)."""

    dtype: str = "fp32"
    """``fp32``; ``tf32`` (fp32 tensors, TF32 math in matrix products and convolutions on CUDA,
    fp32 on a CPU); or ``bf16`` / ``fp16`` autocast (fp16 adds a gradient scaler)."""
    threads: int = 1
    """CPU threads for torch (``torch.set_num_threads``); 0 leaves torch's default."""
    device: str = "cpu"
    """``cpu``, ``cuda`` (the current GPU: ``CUDA_VISIBLE_DEVICES`` picks it) or ``cuda:N``."""
    compile: bool = False
    """Wrap the model in ``torch.compile``."""
    compile_backend: str = "inductor"
    """``torch.compile`` backend (``inductor``, ``aot_eager``, ``eager``)."""
    compile_dynamic: bool | None = None
    """``torch.compile(dynamic=...)``: None (torch's default) compiles the first shape static and recompiles as dynamic
    once a size changes; True dynamic from the first step; False static, one compilation per shape."""
    cudnn_benchmark: bool | None = None
    """``torch.backends.cudnn.benchmark`` during the workload's steps (cuDNN autotunes its kernels on each new input
    shape, a cost the shape's first step pays): None runs with the process's own flag; True or False sets it for each
    step and puts the process's back after. Only cuDNN reads it, so a CPU run is unaffected."""
    micro_batches: int = 1
    """Split each batch into this many micro-batches and accumulate gradients; a batch with fewer samples runs ``min(micro_batches, batch_size)`` (one sample each) and a ``SeqPointWarning`` says so once per workload."""
    optimizer: str = "adamw"
    """``sgd`` (momentum 0.9), ``adam``, ``adamw`` or ``lamb``."""
    lr: float = 1e-3
    """Learning rate."""
    seed: int = 0
    """Seed of the weights and of every batch."""

    PRESETS: ClassVar[dict[str, WorkloadConfig]] = {}

    #: What each field may be (see :mod:`seqpoint._params`); model configs extend it.
    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        "dtype": [Options(DTYPES, quote=False)],
        # "meta" is the counting clones' device, not one a user asks for.
        "device": [Options(DEVICES, quote=False), Predicate(lambda v: isinstance(v, str) and re.fullmatch(
            r"cuda:\d+", v) is not None, "cuda:N"), Predicate(lambda v: v == "meta", "")],
        "optimizer": [Options(OPTIMIZERS, quote=False)],
        "threads": [Interval(int, 0)],
        "micro_batches": [Interval(int, 1)],
        "seed": [Interval(int, 0)],
        "compile": [Boolean("a bool")],
        "compile_dynamic": [Boolean("a bool"), None],
        "cudnn_benchmark": [Boolean("a bool"), None],
        "lr": [Interval(float, 0, None, closed="neither")],
    }

    def to_dict(self) -> dict[str, object]:
        """The fields as plain data (part of every cache key), without ``compile_dynamic`` and
        ``cudnn_benchmark`` at their defaults, so keys cached before they existed still match."""
        return {k: v for k, v in to_dict(self).items()
                if v is not None or k not in ("compile_dynamic", "cudnn_benchmark")}


def check_signature(signature: object, *, workload: str) -> Dims:
    """Validate a signature and return ``(batch_size, seq_len, tgt_len, sum_sq_len)``."""
    if not isinstance(signature, tuple | list) or len(signature) not in (3, 4):
        raise InputError(f"A signature for {workload} is (batch_size, seq_len, tgt_len[, sum_sq_len]). "
                         f"Got {signature!r}.")
    vals = [int(v) for v in signature]
    if vals[0] < 1 or vals[1] < 1 or vals[2] < 0 or (len(vals) == 4 and vals[3] < 0):
        raise InputError(f"A signature for {workload} needs batch_size >= 1, seq_len >= 1, tgt_len >= 0. "
                         f"Got {tuple(vals)!r}.")
    return vals[0], vals[1], vals[2], (vals[3] if len(vals) == 4 else None)


#: The first cuDNN whose RNNs take bf16 (9.13): before it, a CUDA RNN runs bf16 only as fp16.
CUDNN_BF16_RNN = 91300


def autocast_rnn(rnn: torch.nn.RNNBase, forward: Callable[..., Any], x: torch.Tensor, hx: Any) -> Any:
    """``forward(x, hx)`` of ``rnn`` in the autocast dtype. A CPU RNN runs in its input's dtype (fed fp32 under bf16
    autocast, oneDNN fails to create its primitive); a CUDA one under bf16 autocast would run in fp16 (torch's
    ``_cudnn_rnn`` autocast rule is fp16 whatever the dtype), so it runs with autocast off, on bf16 copies of its
    weights, where cuDNN takes bf16, and with a warning that it is fp16 where cuDNN does not."""
    import torch

    device = x.device.type
    if not (x.is_floating_point() and torch.amp.is_autocast_available(device) and torch.is_autocast_enabled(device)):
        return forward(x, hx)  # no autocast (and none on meta, a counting clone)
    dtype = torch.get_autocast_dtype(device)
    x = x.to(dtype)
    if device != "cuda" or dtype != torch.bfloat16:
        return forward(x, hx)
    if (torch.backends.cudnn.version() or 0) < CUDNN_BF16_RNN:
        warnings.warn(f"cuDNN {torch.backends.cudnn.version()} runs RNNs in bf16 only as fp16 (before 9.13): "
                      f"this {type(rnn).__name__} is timed in fp16.", SeqPointWarning, stacklevel=2)
        return forward(x, hx)
    params = {name: p.to(dtype) for name, p in rnn.named_parameters()}  # the cast autocast does for a Linear
    hx = None if hx is None else tuple(h.to(dtype) for h in hx) if isinstance(hx, tuple) else hx.to(dtype)
    with torch.autocast(device, enabled=False), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="RNN module weights are not part of single contiguous")
        return torch.func.functional_call(rnn, params, (x, hx))


class TorchWorkload:
    """Shared machinery of the reference workloads.

    Subclasses set ``family`` and implement ``_build_model`` (a ``torch.nn.Module`` whose
    ``forward(**batch)`` returns the scalar loss) and ``_make_inputs`` (the batch tensors).
    """

    family: ClassVar[str] = ""
    #: The config dataclass of this workload (a subclass of WorkloadConfig, with ``PRESETS``).
    Config: ClassVar[type[WorkloadConfig]] = WorkloadConfig
    #: A small shape stepped only to absorb process start-up before any measured step
    #: (see ``seqpoint.profiling``); odd lengths so it rarely equals a real signature.
    warmup_signature: ClassVar[tuple[int, ...]] = (2, 67, 0)

    def __init__(self, config: WorkloadConfig, *, preset: str | None = None) -> None:
        import torch

        from seqpoint.workloads._optim import make_optimizer

        self.config = config
        self.preset = preset
        self.name = f"{self.family}:{preset}" if preset else self.family
        if config.device.startswith("cuda") and not torch.cuda.is_available():
            raise ConfigError(f"{self.name}: device 'cuda' was asked for but torch sees no CUDA device "
                              f"(torch {torch.__version__}); use device=cpu.")
        self.apply_threads()
        self.device = torch.device(config.device)
        gen_state = torch.random.get_rng_state()
        try:
            # Weights come from the workload's own seed, not from whatever the caller did with
            # the global generator; only the CPU generator is seeded (the model is built there)
            # and it is restored after: a CUDA generator is never touched.
            torch.default_generator.manual_seed(config.seed)
            self.model = self._build_model().to(self.device)
        finally:
            torch.random.set_rng_state(gen_state)
        self.model.train()
        self.optimizer = make_optimizer(config.optimizer, list(self.model.parameters()), config.lr)
        self._forward: Callable[..., torch.Tensor] = self.model
        # Keys of the warnings already given; shared with counting clones so that each
        # warning reaches the user once per workload, not once per step or per clone.
        self._warned: set[str] = set()
        if config.compile:
            self._forward = torch.compile(self.model, backend=config.compile_backend, dynamic=config.compile_dynamic)
        if config.dtype == "bf16" and self.device.type == "cuda" and not torch.cuda.is_bf16_supported(False):
            raise ConfigError(f"{self.name}: dtype 'bf16' on a {torch.cuda.get_device_name()}, which has no bf16 "
                              "arithmetic (torch would emulate it, slower than fp32); use dtype fp16 or fp32.")
        self._autocast_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(config.dtype)
        fp16 = config.dtype == "fp16" and self.device.type != "meta"
        self._scaler = torch.amp.GradScaler(self.device.type) if fp16 else None
        self.steps = self.skipped_steps = 0  # fp16: steps whose gradients overflowed skip the optimizer

    # -- subclass hooks ------------------------------------------------------------
    def _build_model(self) -> torch.nn.Module:
        raise NotImplementedError

    def _make_inputs(self, dims: Dims, gen: torch.Generator) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def _split(self, batch: dict[str, torch.Tensor], n: int) -> list[dict[str, torch.Tensor]]:
        """``n`` near-equal parts (larger ones first) along the batch dimension (``_batch_dim``)."""
        import torch

        parts = {k: torch.tensor_split(v, n, dim=self._batch_dim(k)) for k, v in batch.items()}
        return [{k: parts[k][i] for k in batch} for i in range(n)]

    def _batch_dim(self, key: str) -> int:
        return 0

    def _batch_size(self, batch: dict[str, torch.Tensor]) -> int:
        key = next(iter(batch))
        return int(batch[key].shape[self._batch_dim(key)])

    # -- public API ----------------------------------------------------------------
    def make_batch(self, signature: Signature) -> dict[str, torch.Tensor]:
        """A deterministic batch of ``signature``'s shape on the workload's device.

        Parameters
        ----------
        signature : tuple of int
            ``(batch_size, seq_len, tgt_len[, sum_sq_len])``.

        Returns
        -------
        dict of str to Tensor
            The model's inputs; the same signature always gives the same values.
        """
        import torch

        dims = check_signature(signature, workload=self.name)

        def build(gen: torch.Generator) -> dict[str, torch.Tensor]:
            # On the meta device (a counting clone) the same code makes tensors without storage.
            with torch.device("meta") if self.device.type == "meta" else contextlib.nullcontext():
                return self._make_inputs(dims, gen)

        return self._on_device(dims[0], tuple(signature), build)

    def _on_device(self, batch_size: int, key: tuple[int, ...],
                   build: Callable[[torch.Generator], dict[str, torch.Tensor]]) -> dict[str, torch.Tensor]:
        """``build(gen)``, ``gen`` seeded by the workload's seed and ``key`` (63 bits, stable across runs), moved to
        the device."""
        import numpy as np
        import torch

        # torch's thread count is process-wide; another workload may have changed it
        self.apply_threads()
        self._micro_batch_count(batch_size)  # warn here, outside any timed step, when it is clipped
        state = np.random.SeedSequence([self.config.seed, *(int(v) for v in key)]).generate_state(1, dtype=np.uint64)
        gen = torch.Generator(device="cpu")
        gen.manual_seed(int(state[0] >> 1))
        return {k: v.to(self.device) for k, v in build(gen).items()}

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """Forward pass and :meth:`compute_loss` (under autocast when the dtype asks for it)."""
        import torch

        if self._autocast_dtype is None or self.device.type == "meta":
            # meta tensors have no autocast: counting clones run in the weights' dtype
            return self.compute_loss(self._forward, batch)
        with torch.autocast(self.device.type, dtype=self._autocast_dtype):
            return self.compute_loss(self._forward, batch)

    def compute_loss(self, model: Callable[..., torch.Tensor], batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """The scalar loss of ``batch``: ``model(**batch)``, or its ``.loss`` when it has one."""
        out = model(**batch)
        return out if not hasattr(out, "loss") else out.loss

    def step(self, batch: dict[str, torch.Tensor]) -> float:
        """One training iteration (forward, loss, backward, optimizer step); the batch's loss.

        With ``micro_batches`` > 1 the batch is split into ``min(micro_batches, batch_size)``
        near-equal parts whose gradients accumulate, each loss (a mean over its samples) scaled
        by the part's share of the samples: the gradient and the returned loss are the whole
        batch's. Batch norm sees each micro-batch alone, as in real gradient accumulation.
        """
        with self._flags():
            try:
                return self._step(batch)
            except BaseException:
                if self._scaler is not None:  # a failed step leaves its optimizer unscaled: start clean
                    self._scaler = type(self._scaler)(self.device.type, init_scale=self._scaler.get_scale())
                raise

    @contextlib.contextmanager
    def _flags(self) -> Iterator[None]:
        """The process-wide flags of this workload's step (TF32 for ``tf32`` on CUDA, cuDNN's
        autotuning when the config says), the caller's put back after."""
        import torch

        cudnn, matmul = torch.backends.cudnn, torch.backends.cuda.matmul
        saved = matmul.allow_tf32, cudnn.allow_tf32, cudnn.benchmark
        if self.config.dtype == "tf32" and self.device.type == "cuda":
            matmul.allow_tf32 = cudnn.allow_tf32 = True
        if self.config.cudnn_benchmark is not None:
            cudnn.benchmark = self.config.cudnn_benchmark
        try:
            yield
        finally:
            if (matmul.allow_tf32, cudnn.allow_tf32, cudnn.benchmark) != saved:
                matmul.allow_tf32, cudnn.allow_tf32, cudnn.benchmark = saved

    def _step(self, batch: dict[str, torch.Tensor]) -> float:
        total = self._batch_size(batch)
        n_parts = self._micro_batch_count(total)
        parts = [batch] if n_parts == 1 else self._split(batch, n_parts)
        losses = []
        for part in parts:
            loss = self.loss(part)
            scaled = loss * (self._batch_size(part) / total) if len(parts) > 1 else loss
            (scaled if self._scaler is None else self._scaler.scale(scaled)).backward()
            losses.append(scaled.detach())
        self.steps += 1
        if self._scaler is not None:
            scale = self._scaler.get_scale()
            self._scaler.step(self.optimizer)
            self._scaler.update()
            if self._scaler.get_scale() < scale:  # the gradients overflowed: the optimizer was skipped
                self._skipped()
        else:
            self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float("nan") if self.device.type == "meta" else float(sum(losses[1:], losses[0]))

    def _micro_batch_count(self, batch_size: int) -> int:
        """Micro-batches for a batch of ``batch_size`` samples (never an empty one)."""
        n = self.config.micro_batches
        if n <= batch_size:
            return n
        if "micro_batches" not in self._warned:
            self._warned.add("micro_batches")
            warnings.warn(
                f"{self.name}: micro_batches={n} exceeds the batch size {batch_size}; batches "
                f"smaller than {n} samples run as one micro-batch per sample "
                "(min(micro_batches, batch_size)). Warned once per workload.", SeqPointWarning, stacklevel=3)
        return batch_size

    def apply_threads(self) -> None:
        """Set torch's (process-wide) thread count to the config's ``threads`` (0: leave it)."""
        import torch

        if self.config.threads > 0 and torch.get_num_threads() != self.config.threads:
            torch.set_num_threads(self.config.threads)

    def _skipped(self) -> None:
        self.skipped_steps += 1
        if "skipped" not in self._warned:
            self._warned.add("skipped")
            warnings.warn(f"{self.name}: an fp16 step's gradients overflowed and its optimizer step was skipped, as "
                          "train() skips it (GradScaler): such a step costs less than the others; the count is "
                          "the workload's skipped_steps. Warned once per workload.", SeqPointWarning, stacklevel=4)

    def counting_clone(self) -> TorchWorkload:
        """The same workload on the meta device (no storage), for counting FLOPs and bytes."""
        cfg = dataclasses.replace(self.config, device="meta", compile=False)
        clone = type(self)(cfg, preset=self.preset)
        clone.name = self.name
        clone._warned = self._warned
        return clone

    def n_parameters(self) -> int:
        """Trainable parameters of the model."""
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)

    def use_forward(self, forward: Callable[..., torch.Tensor]) -> None:
        """Call the model through ``forward`` from now on (a ``DistributedDataParallel``
        wrapper of :attr:`model`, whose backward then all-reduces the gradients)."""
        self._forward = forward

