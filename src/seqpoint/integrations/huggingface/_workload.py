"""``workload_from_trainer``: the trainer's own training step as a seqpoint workload."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from seqpoint.workloads import Signature

__all__ = ["TrainerWorkload", "workload_from_trainer"]


class TrainerWorkload:
    """One ``trainer.train()`` step (forward, ``compute_loss``, backward, optimizer step).

    It runs on a copy of the trainer's model with an optimizer the trainer creates for
    that copy (``trainer.create_optimizer``), so profiling never changes the user's
    weights or optimizer state. Inputs are synthetic token ids of the signature's shape,
    seeded by the signature, under the trainer's ``bf16``/``fp16`` autocast.

    Parameters
    ----------
    trainer : transformers.Trainer
        The user's trainer.
    seed : int, default 0
        Seed of the synthetic inputs.
    """

    def __init__(self, trainer: Any, *, seed: int = 0) -> None:
        self.trainer = trainer
        self.model = copy.deepcopy(trainer.model)
        self.model.train()
        self.optimizer = self._create_optimizer()
        args = trainer.args
        model_config = getattr(self.model, "config", None)
        self.name = f"hf:{type(self.model).__name__}"
        self.config: dict[str, Any] = {
            "model": type(self.model).__name__,
            "model_config": model_config.to_dict() if model_config is not None else {},
            "optim": str(getattr(args, "optim", "")),
            "learning_rate": float(args.learning_rate),
            "bf16": bool(args.bf16),
            "fp16": bool(args.fp16),
            "device": str(args.device),
            "seed": seed,
        }
        self.seed = seed
        self.device = args.device
        self.vocab_size = int(getattr(model_config, "vocab_size", 2) or 2)
        self.encoder_decoder = bool(getattr(model_config, "is_encoder_decoder", False))

    def _create_optimizer(self) -> Any:
        # create_optimizer fills trainer.optimizer only while it is None: borrow the slot.
        saved = self.trainer.optimizer
        self.trainer.optimizer = None
        try:
            return self.trainer.create_optimizer(self.model)
        finally:
            self.trainer.optimizer = saved

    def make_batch(self, signature: Signature) -> dict[str, Any]:
        """Token ids, attention mask and labels of shape ``(batch_size, seq_len)``."""
        import torch

        batch_size, seq_len = int(signature[0]), int(signature[1])
        tgt_len = int(signature[2]) if len(signature) > 2 else 0
        gen = torch.Generator().manual_seed(hash((self.seed, *signature)) % (2**31))
        # Ids above the special tokens' usual range, so no id is a pad/mask by accident.
        low = min(5, self.vocab_size - 1)
        ids = torch.randint(low, self.vocab_size, (batch_size, seq_len), generator=gen)
        batch: dict[str, Any] = {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
        if self.encoder_decoder:
            batch["labels"] = torch.randint(low, self.vocab_size, (batch_size, max(tgt_len, 1)), generator=gen)
        else:
            batch["labels"] = ids.clone()
        return {k: v.to(self.device) for k, v in batch.items()}

    def _autocast(self) -> Any:
        import torch

        args = self.trainer.args
        if args.bf16 or args.fp16:
            dtype = torch.bfloat16 if args.bf16 else torch.float16
            return torch.autocast(device_type=self.device.type, dtype=dtype)
        return contextlib.nullcontext()

    def step(self, batch: dict[str, Any]) -> float:
        """One optimizer step on ``batch``; returns the loss."""
        with self._autocast():
            loss = self.trainer.compute_loss(self.model, batch)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return float(loss.detach())


def workload_from_trainer(trainer: Any, *, seed: int = 0) -> TrainerWorkload:
    """A seqpoint workload running ``trainer``'s model, optimizer and loss.

    Parameters
    ----------
    trainer : transformers.Trainer
        The user's trainer; its model is copied, never trained.
    seed : int, default 0
        Seed of the synthetic inputs.

    Returns
    -------
    TrainerWorkload
        Satisfies :class:`seqpoint.workloads.Workload`: profile, cache and project it
        like a built-in workload.
    """
    return TrainerWorkload(trainer, seed=seed)
