"""Optimizers of the reference workloads: SGD (momentum), Adam, AdamW and LAMB (You et al., ICLR 2020, Algorithm 2, as
the NVIDIA BERT reference). Written with ``torch._foreach_*`` kernels, state allocated up front and the step count a
Python int, so every step (the first included) runs the same operations, on the meta device too, where FLOPs and bytes
are counted (torch's own Adam reads its step counter back with ``.item()``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import torch

from seqpoint.exceptions import ConfigError

__all__ = ["LAMB", "SGD", "Adam", "make_optimizer"]

Tensors = list[torch.Tensor]
#: torch's parameter group: hyperparameters by name (floats, the betas pair, the params list).
Group = dict[str, Any]


class _ForeachOptimizer(torch.optim.Optimizer):
    """One parameter group, state built eagerly, integer step count; subclasses write ``_update``."""

    state_names: ClassVar[tuple[str, ...]] = ("exp_avg", "exp_avg_sq")

    def __init__(self, params: Sequence[torch.nn.Parameter], **defaults: object) -> None:
        super().__init__(list(params), defaults)
        self.step_count = 0
        for p in self.param_groups[0]["params"]:
            self.state[p] = {name: torch.zeros_like(p) for name in self.state_names}

    def __getstate__(self) -> dict[str, object]:
        # torch pickles defaults, state and groups only; a workload sent to a worker keeps its count.
        return {**super().__getstate__(), "step_count": self.step_count}

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> None:  # type: ignore[override]
        ps = [p for p in self.param_groups[0]["params"] if p.grad is not None]
        if ps:
            self._update(self.param_groups[0], ps, [p.grad for p in ps])

    def _update(self, g: Group, ps: Tensors, gs: Tensors) -> None:
        raise NotImplementedError

    def _adam_moments(self, g: Group, ps: Tensors, gs: Tensors) -> tuple[Tensors, Tensors, float]:
        """Advance Adam's moments; the direction is ``m / bc1 / denom`` (returns ``m, denom, bc1``)."""
        self.step_count += 1
        b1, b2 = g["betas"]
        m = [self.state[p]["exp_avg"] for p in ps]
        v = [self.state[p]["exp_avg_sq"] for p in ps]
        torch._foreach_lerp_(m, gs, 1.0 - b1)
        torch._foreach_mul_(v, b2)
        torch._foreach_addcmul_(v, gs, gs, 1.0 - b2)
        denom = list(torch._foreach_sqrt(v))
        torch._foreach_div_(denom, (1.0 - b2**self.step_count) ** 0.5)
        torch._foreach_add_(denom, g["eps"])
        return m, denom, 1.0 - b1**self.step_count


class SGD(_ForeachOptimizer):
    """SGD with momentum 0.9 (the DeepSpeech2 reference recipe)."""

    state_names = ("momentum_buffer",)

    def __init__(self, params: Sequence[torch.nn.Parameter], lr: float, momentum: float = 0.9) -> None:
        super().__init__(params, lr=lr, momentum=momentum)

    def _update(self, g: Group, ps: Tensors, gs: Tensors) -> None:
        bufs = [self.state[p]["momentum_buffer"] for p in ps]
        torch._foreach_mul_(bufs, g["momentum"])
        torch._foreach_add_(bufs, gs)
        torch._foreach_add_(ps, bufs, alpha=-g["lr"])
        self.step_count += 1


class Adam(_ForeachOptimizer):
    """Adam, or AdamW with ``decoupled=True`` (Loshchilov & Hutter, 2019)."""

    def __init__(self, params: Sequence[torch.nn.Parameter], lr: float, *,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                 decoupled: bool = False) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, decoupled=decoupled)

    def _update(self, g: Group, ps: Tensors, gs: Tensors) -> None:
        if g["weight_decay"] and g["decoupled"]:
            torch._foreach_mul_(ps, 1.0 - g["lr"] * g["weight_decay"])
        elif g["weight_decay"]:
            gs = list(torch._foreach_add(gs, ps, alpha=g["weight_decay"]))
        m, denom, bc1 = self._adam_moments(g, ps, gs)
        torch._foreach_addcdiv_(ps, m, denom, -g["lr"] / bc1)


class LAMB(_ForeachOptimizer):
    """LAMB: Adam's update rescaled per tensor by the trust ratio ``‖w‖ / ‖update‖``."""

    def __init__(self, params: Sequence[torch.nn.Parameter], lr: float, *,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-6, weight_decay: float = 0.01) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)

    def _update(self, g: Group, ps: Tensors, gs: Tensors) -> None:
        m, denom, bc1 = self._adam_moments(g, ps, gs)
        update = torch._foreach_div(m, denom)
        torch._foreach_div_(update, bc1)
        if g["weight_decay"]:
            torch._foreach_add_(update, ps, alpha=g["weight_decay"])
        # trust ratio ‖w‖/‖u‖ where both are non-zero, else 1: all tensors at once, on the device
        w, u = torch.stack(torch._foreach_norm(ps)), torch.stack(torch._foreach_norm(update))
        ratio = torch.where((w > 0) & (u > 0), w / u, torch.ones_like(w)) * -g["lr"]
        torch._foreach_mul_(update, list(ratio.unbind()))
        torch._foreach_add_(ps, update)


_OPTIMIZERS: dict[str, Callable[[Sequence[torch.nn.Parameter], float], torch.optim.Optimizer]] = {
    "sgd": SGD, "adam": Adam,
    "adamw": lambda params, lr: Adam(params, lr, weight_decay=0.01, decoupled=True), "lamb": LAMB}


def make_optimizer(name: str, params: Sequence[torch.nn.Parameter], lr: float) -> torch.optim.Optimizer:
    if name not in _OPTIMIZERS:
        raise ConfigError(f"Unknown optimizer {name!r}. Valid names: adam, adamw, lamb, sgd.")
    return _OPTIMIZERS[name](params, lr)
