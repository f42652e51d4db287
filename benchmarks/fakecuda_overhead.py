"""What fake CUDA costs: one training step of small models on the CPU, plain vs under
``fake_cuda()`` (the same step with ``device="cuda"``), CPU time, min of alternating rounds.

    python benchmarks/fakecuda_overhead.py [--rounds 5] [--steps 50]

Prints one line per model: plain ms/step, fake ms/step, ratio.
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from flake8_torchdevice.fakecuda import fake_cuda


def tiny() -> tuple[nn.Module, tuple]:
    """The worst case: so little arithmetic that the per-call bookkeeping shows."""
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 10)), (32, 8)


def mlp() -> tuple[nn.Module, tuple]:
    return nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10)), (64, 784)


def cnn() -> tuple[nn.Module, tuple]:
    model = nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        nn.Flatten(), nn.Linear(32, 10),
    )
    return model, (32, 3, 32, 32)


def steps(build, device: str, count: int) -> float:
    """CPU seconds per training step (Adam, cross-entropy) of ``count`` steps on ``device``."""
    torch.manual_seed(0)
    model, shape = build()
    model = model.to(device)
    optimizer = torch.optim.Adam(model.parameters())
    inputs, labels = torch.randn(*shape), torch.randint(0, 10, (shape[0],))
    started = time.process_time()
    for _ in range(count):
        loss = nn.functional.cross_entropy(model(inputs.to(device)), labels.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return (time.process_time() - started) / count


def measure(build, rounds: int, count: int) -> tuple[float, float]:
    plain, fake = [], []
    for _ in range(rounds):
        plain.append(steps(build, "cpu", count))
        with fake_cuda():
            fake.append(steps(build, "cuda", count))
    return min(plain), min(fake)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=50)
    options = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, min of {options.rounds} rounds of {options.steps} steps")
    for name, build in (("tiny MLP 8-16-10, batch 32", tiny), ("MLP 784-256-10, batch 64", mlp), ("CNN 2 conv + BN, 32x32, batch 32", cnn)):
        plain, fake = measure(build, options.rounds, options.steps)
        print(f"{name}: plain {plain * 1e3:.2f} ms/step, fake CUDA {fake * 1e3:.2f} ms/step, "
              f"ratio {fake / plain:.2f}x")


if __name__ == "__main__":
    main()
