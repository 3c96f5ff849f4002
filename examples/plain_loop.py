"""Record a plain PyTorch training loop twice, then project it from SeqPoints and check it.

Run from the repository root: ``python examples/plain_loop.py`` (CPU, under a minute).
The lines a user adds are marked ``# seqpoint``: a ``record`` block around the loop, and
one ``project_job`` call naming the loop's training step as a workload (``Encoder`` below,
built from each SeqPoint's real per-row lengths). Two recorded runs give the noise floor.
"""

from __future__ import annotations

import random

import torch

from seqpoint.integrations import record  # seqpoint
from seqpoint.workloads import BatchShape, UserWorkload, WorkloadConfig

WIDTH = 32


def model() -> torch.nn.Module:
    return torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(d_model=WIDTH, nhead=2, dim_feedforward=64, batch_first=True), 2)


class Encoder(UserWorkload):
    """The loop's step as a workload: same model, optimizer and loss, batches of the real lengths."""

    Config = WorkloadConfig

    def build_model(self) -> torch.nn.Module:
        return model()

    def build_batch(self, shape: BatchShape, gen: torch.Generator) -> dict[str, torch.Tensor]:
        return {"x": torch.randn(shape.batch_size, shape.seq_len, WIDTH, generator=gen),
                "pad": ~torch.as_tensor(shape.real_mask())}  # True on padding, as the loop's mask == 0

    def compute_loss(self, model, batch):  # type: ignore[no-untyped-def]
        return model(batch["x"], src_key_padding_mask=batch["pad"]).pow(2).mean()


def train(path: str) -> None:
    """The user's loop, recorded (one thread, as the workload's config runs the SeqPoints)."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rng = random.Random(0)
    net = model()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    with record(path) as rec:  # seqpoint
        for epoch in range(2):
            rec.set_epoch(epoch)  # seqpoint
            for _ in range(40):
                lengths = [rng.randint(4, 256) for _ in range(8)]
                x = torch.randn(8, max(lengths), WIDTH)
                mask = torch.tensor([[1] * n + [0] * (max(lengths) - n) for n in lengths])
                with rec.step({"inputs_embeds": x, "attention_mask": mask}):  # seqpoint: reads the mask
                    out = net(x, src_key_padding_mask=mask == 0)
                    out.pow(2).mean().backward()
                    opt.step()
                    opt.zero_grad()


def main() -> None:
    from seqpoint.workflows import project_job  # seqpoint

    traces = ["runs/examples/plain_trace.csv", "runs/examples/plain_trace2.csv"]
    for path in traces:
        train(path)
    print(project_job(traces[0], Encoder(), traces=traces, n_points=8))  # seqpoint


if __name__ == "__main__":
    main()
