"""Record a plain PyTorch training loop as a run trace and read it back as a schedule.

Run from the repository root: ``python examples/plain_loop.py`` (CPU, seconds). The
lines a user adds are marked ``# seqpoint``.
"""

import random

import torch

from seqpoint.integrations import record  # seqpoint
from seqpoint.validation import read_trace


def main() -> None:
    torch.manual_seed(0)
    rng = random.Random(0)
    model = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(d_model=32, nhead=2, dim_feedforward=64, batch_first=True), 2)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    with record("runs/examples/plain_trace.csv") as rec:  # seqpoint
        for epoch in range(2):
            rec.set_epoch(epoch)  # seqpoint
            for _ in range(20):
                lengths = [rng.randint(4, 64) for _ in range(8)]
                x = torch.randn(8, max(lengths), 32)
                mask = torch.tensor([[1] * n + [0] * (max(lengths) - n) for n in lengths])
                batch = {"inputs_embeds": x, "attention_mask": mask}
                with rec.step(batch):  # seqpoint: times the block, reads the shape from the mask
                    out = model(x, src_key_padding_mask=mask == 0)
                    out.pow(2).mean().backward()
                    opt.step()
                    opt.zero_grad()

    trace = read_trace("runs/examples/plain_trace.csv")
    print(trace)
    print(trace.to_schedule())


if __name__ == "__main__":
    main()
