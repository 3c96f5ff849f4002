"""DeepSpeech2 (Amodei et al., 2016), the SeqPoint paper's speech-recognition model: two 2-D
convolutions over spectrogram frames (10 ms each), bidirectional GRU or LSTM layers, a linear
layer to the characters and the CTC loss. ``seq_len`` is frames; the transcript is ``tgt_len``
characters, else ``seq_len // frames_per_char``, clipped so CTC stays feasible."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, ClassVar

from seqpoint._params import Constraint, Interval, Options, Predicate
from seqpoint.workloads._base import Dims, TorchWorkload, WorkloadConfig, autocast_rnn

if TYPE_CHECKING:
    import torch

__all__ = ["DeepSpeech2", "DeepSpeech2Config"]


def _two_positive_ints(v: object) -> bool:
    return isinstance(v, tuple) and len(v) == 2 and all(Interval(int, 1).accepts(x) for x in v)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DeepSpeech2Config(WorkloadConfig):
    """Size and training settings of a DeepSpeech2 workload."""

    n_features: int = 161
    """Spectrogram bins per frame (161 for a 20 ms window at 16 kHz)."""
    conv_channels: int = 32
    """Output channels of both convolutions."""
    conv_kernel: tuple[int, int] = (41, 11)
    """Kernel (frequency, time) of the first convolution; the second uses (21, 11)."""
    time_strides: tuple[int, int] = (2, 1)
    """Stride in time of the two convolutions (their product shortens the sequence)."""
    rnn_type: str = "gru"
    """``gru`` or ``lstm``."""
    rnn_layers: int = 5
    """Bidirectional recurrent layers."""
    rnn_hidden: int = 800
    """Hidden units per direction."""
    vocab: int = 29
    """Output characters including the CTC blank (index 0)."""
    frames_per_char: int = 7
    """Frames per transcript character when the signature has no ``tgt_len``."""
    optimizer: str = "sgd"
    """``sgd`` (momentum 0.9, the DeepSpeech2 recipe), ``adam``, ``adamw`` or ``lamb``."""
    lr: float = 3e-4
    """Learning rate."""

    _parameter_constraints: ClassVar[dict[str, list[Constraint]]] = {
        **WorkloadConfig._parameter_constraints,
        **{key: [Interval(int, 1)]
           for key in ("n_features", "conv_channels", "rnn_layers", "rnn_hidden", "frames_per_char")},
        "rnn_type": [Options(("gru", "lstm"))],
        "vocab": [Interval(int, 2)],
        **{key: [Predicate(_two_positive_ints, "two ints >= 1")] for key in ("conv_kernel", "time_strides")},
    }

    def output_frames(self, frames: int) -> int:
        """Time steps after the convolutions for ``frames`` input frames."""
        kt = self.conv_kernel[1]
        t = frames
        for s in self.time_strides:
            t = (t + 2 * (kt // 2) - kt) // s + 1
        return t


# ``paper``: 2 convolutions (32 channels, strides 2x2 and 2x1 as in the DS2 paper) and 5 bidirectional GRU layers of 800
# units (the deepspeech.pytorch/MLPerf setting). ``tiny`` uses LSTM (oneDNN's CPU kernel is ~4x faster than the per-step
# GRU loop), a time stride of 8 and one target unit per 28 frames (the CPU CTC kernel is quadratic in length): ~20 ms a
# CPU step on 16 x 12 s of audio, ~150 ms on the longest LibriSpeech batch (32 x 24.5 s).
DeepSpeech2Config.PRESETS = {
    "tiny": DeepSpeech2Config(n_features=16, conv_channels=4, conv_kernel=(3, 3), time_strides=(2, 4),
                              rnn_type="lstm", rnn_layers=1, rnn_hidden=16, frames_per_char=28,
                              optimizer="adamw", lr=3e-3),
    "small": DeepSpeech2Config(n_features=81, conv_channels=16, conv_kernel=(21, 11), time_strides=(2, 2),
                               rnn_type="gru", rnn_layers=3, rnn_hidden=256, optimizer="adamw", lr=1e-3),
    "paper": DeepSpeech2Config(),
}


class DeepSpeech2(TorchWorkload):
    """DeepSpeech2 training step (see :class:`DeepSpeech2Config`)."""

    family: ClassVar[str] = "deepspeech2"
    Config = DeepSpeech2Config
    config: DeepSpeech2Config

    def _build_model(self) -> torch.nn.Module:
        cfg = self.config
        import torch
        from torch import nn

        kf, kt = cfg.conv_kernel
        kf2 = max(1, kf // 2 + 1) if kf > 3 else kf

        class Model(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                c = cfg.conv_channels
                self.conv = nn.Sequential(
                    nn.Conv2d(1, c, (kf, kt), stride=(2, cfg.time_strides[0]), padding=(kf // 2, kt // 2)),
                    nn.BatchNorm2d(c),
                    nn.Hardtanh(0, 20),
                    nn.Conv2d(c, c, (kf2, kt), stride=(2, cfg.time_strides[1]), padding=(kf2 // 2, kt // 2)),
                    nn.BatchNorm2d(c),
                    nn.Hardtanh(0, 20),
                )
                f = cfg.n_features
                f = (f + 2 * (kf // 2) - kf) // 2 + 1
                f = (f + 2 * (kf2 // 2) - kf2) // 2 + 1
                rnn_cls = nn.GRU if cfg.rnn_type == "gru" else nn.LSTM
                self.rnn = rnn_cls(c * f, cfg.rnn_hidden, num_layers=cfg.rnn_layers, bidirectional=True)
                self.fc = nn.Linear(2 * cfg.rnn_hidden, cfg.vocab)
                self.ctc = nn.CTCLoss(blank=0, zero_infinity=True)

            def forward(self, spectrogram: torch.Tensor, targets: torch.Tensor, target_lengths: torch.Tensor) -> torch.Tensor:
                x = self.conv(spectrogram)  # (B, C, F', T')
                x = x.flatten(1, 2).permute(2, 0, 1).contiguous()  # (T', B, C*F')
                x, _ = autocast_rnn(self.rnn, self.rnn, x, None)
                logits = self.fc(x).float()  # CTC in fp32 under autocast
                log_probs = logits.log_softmax(-1)
                t, b = log_probs.shape[0], log_probs.shape[1]
                input_lengths = torch.full((b,), t, dtype=torch.long, device=log_probs.device)
                return self.ctc(log_probs, targets, input_lengths, target_lengths)

        return Model()

    def target_length(self, seq_len: int, tgt_len: int) -> int:
        """Transcript characters of a batch row (deterministic in the signature)."""
        t_out = self.config.output_frames(seq_len)
        want = tgt_len if tgt_len > 0 else seq_len // self.config.frames_per_char
        # CTC needs at least one output step per character (plus blanks between repeats).
        return max(1, min(want, t_out // 2 if t_out >= 2 else 1))

    def _make_inputs(self, dims: Dims, gen: torch.Generator) -> dict[str, torch.Tensor]:
        import torch

        batch_size, seq_len, tgt_len, _ = dims
        cfg = self.config
        s = self.target_length(seq_len, tgt_len)
        return {
            "spectrogram": torch.randn(batch_size, 1, cfg.n_features, seq_len, generator=gen),
            "targets": torch.randint(1, cfg.vocab, (batch_size, s), generator=gen),
            "target_lengths": torch.full((batch_size,), s, dtype=torch.long),
        }
