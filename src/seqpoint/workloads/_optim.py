"""Optimizers of the reference workloads: SGD (momentum), Adam, AdamW and LAMB.

They are written with ``torch._foreach_*`` kernels (as torch's own multi-tensor
implementations are) and keep the step count as a Python int, with the state
allocated when the optimizer is built. That makes every step run the same
operations, including the first, and lets the very same step run on the meta device,
where FLOPs and bytes are counted without arithmetic (torch's own Adam reads its step
counter back with ``.item()``, which the meta device cannot do). LAMB is not in
torch; it follows You et al., "Large Batch Optimization for Deep Learning: Training
BERT in 76 minutes" (ICLR 2020), Algorithm 2, as the NVIDIA BERT reference does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from seqpoint.exceptions import ConfigError

__all__ = ["LAMB", "SGD", "Adam", "make_optimizer"]


class _ForeachOptimizer(torch.optim.Optimizer):
    """Base class: one parameter group, state built eagerly, integer step count."""

    def __init__(self, params: Sequence[torch.nn.Parameter], defaults: dict[str, Any]) -> None:
        super().__init__(list(params), defaults)
        self.step_count = 0
        for p in self._params():
            self.state[p] = {name: torch.zeros_like(p) for name in self._state_names()}

    def __getstate__(self) -> dict[str, Any]:
        # torch's Optimizer pickles its defaults, state and groups only; the step count is
        # ours (a workload sent pickled to a worker process keeps it).
        state: dict[str, Any] = super().__getstate__()
        return {**state, "step_count": self.step_count}

    def _state_names(self) -> tuple[str, ...]:
        return ()

    def _params(self) -> list[torch.Tensor]:
        return [p for g in self.param_groups for p in g["params"]]

    def _with_grad(self) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        ps = [p for p in self._params() if p.grad is not None]
        return ps, [p.grad for p in ps]  # type: ignore[misc]


def _adam_moments(
    opt: _ForeachOptimizer, ps: list[torch.Tensor], gs: list[torch.Tensor]
) -> tuple[list[torch.Tensor], list[torch.Tensor], float]:
    """Advance Adam's moments (shared by Adam/AdamW and LAMB).

    Returns the first moments ``m``, the denominators ``sqrt(v / bc2) + eps`` and the
    first-moment bias correction ``bc1``: the update direction is ``m / bc1 / denom``.
    """
    g = opt.param_groups[0]
    opt.step_count += 1
    b1, b2 = g["betas"]
    m = [opt.state[p]["exp_avg"] for p in ps]
    v = [opt.state[p]["exp_avg_sq"] for p in ps]
    torch._foreach_lerp_(m, gs, 1.0 - b1)
    torch._foreach_mul_(v, b2)
    torch._foreach_addcmul_(v, gs, gs, 1.0 - b2)
    denom = list(torch._foreach_sqrt(v))
    torch._foreach_div_(denom, (1.0 - b2**opt.step_count) ** 0.5)
    torch._foreach_add_(denom, g["eps"])
    return m, denom, 1.0 - b1**opt.step_count


class SGD(_ForeachOptimizer):
    """SGD with momentum 0.9 (the DeepSpeech2 reference recipe)."""

    def __init__(
        self, params: Sequence[torch.nn.Parameter], lr: float, momentum: float = 0.9
    ) -> None:
        super().__init__(params, {"lr": lr, "momentum": momentum})

    def _state_names(self) -> tuple[str, ...]:
        return ("momentum_buffer",)

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        group = self.param_groups[0]
        ps, gs = self._with_grad()
        if not ps:
            return
        bufs = [self.state[p]["momentum_buffer"] for p in ps]
        torch._foreach_mul_(bufs, group["momentum"])
        torch._foreach_add_(bufs, gs)
        torch._foreach_add_(ps, bufs, alpha=-group["lr"])
        self.step_count += 1


class Adam(_ForeachOptimizer):
    """Adam, or AdamW with ``decoupled=True`` (Loshchilov & Hutter, 2019)."""

    def __init__(
        self,
        params: Sequence[torch.nn.Parameter],
        lr: float,
        *,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        decoupled: bool = False,
    ) -> None:
        super().__init__(
            params,
            {
                "lr": lr,
                "betas": betas,
                "eps": eps,
                "weight_decay": weight_decay,
                "decoupled": decoupled,
            },
        )

    def _state_names(self) -> tuple[str, ...]:
        return ("exp_avg", "exp_avg_sq")

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        g = self.param_groups[0]
        ps, gs = self._with_grad()
        if not ps:
            return
        if g["weight_decay"] and g["decoupled"]:
            torch._foreach_mul_(ps, 1.0 - g["lr"] * g["weight_decay"])
        elif g["weight_decay"]:
            gs = list(torch._foreach_add(gs, ps, alpha=g["weight_decay"]))
        m, denom, bc1 = _adam_moments(self, ps, gs)
        torch._foreach_addcdiv_(ps, m, denom, -g["lr"] / bc1)


class LAMB(_ForeachOptimizer):
    """LAMB: Adam's update rescaled per tensor by the trust ratio ``‖w‖ / ‖update‖``."""

    def __init__(
        self,
        params: Sequence[torch.nn.Parameter],
        lr: float,
        *,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-6,
        weight_decay: float = 0.01,
    ) -> None:
        super().__init__(
            params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay}
        )

    def _state_names(self) -> tuple[str, ...]:
        return ("exp_avg", "exp_avg_sq")

    @torch.no_grad()
    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        g = self.param_groups[0]
        ps, gs = self._with_grad()
        if not ps:
            return
        m, denom, bc1 = _adam_moments(self, ps, gs)
        update = torch._foreach_div(m, denom)
        torch._foreach_div_(update, bc1)
        if g["weight_decay"]:
            torch._foreach_add_(update, ps, alpha=g["weight_decay"])
        w_norm = torch._foreach_norm(ps)
        u_norm = torch._foreach_norm(update)
        # trust ratio = ‖w‖/‖u‖ where both are non-zero, else 1; computed for all tensors
        # at once and kept on the device (no .item(), no per-tensor kernels)
        w = torch.stack(w_norm)
        u = torch.stack(u_norm)
        ratio = torch.where((w > 0) & (u > 0), w / u, torch.ones_like(w)) * -g["lr"]
        torch._foreach_mul_(update, list(ratio.unbind()))
        torch._foreach_add_(ps, update)


def make_optimizer(
    name: str, params: Sequence[torch.nn.Parameter], lr: float
) -> torch.optim.Optimizer:
    """Build the optimizer named ``name`` (``sgd``, ``adam``, ``adamw``, ``lamb``)."""
    if name == "sgd":
        return SGD(params, lr)
    if name == "adam":
        return Adam(params, lr)
    if name == "adamw":
        return Adam(params, lr, weight_decay=0.01, decoupled=True)
    if name == "lamb":
        return LAMB(params, lr)
    raise ConfigError(f"Unknown optimizer {name!r}. Valid names: adam, adamw, lamb, sgd.")
