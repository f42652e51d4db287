"""A small training script with a device mistake that CPU-only CI never sees.

On a CPU machine ``device`` is the CPU, so forgetting to move the labels costs
nothing; on a GPU the loss meets CUDA logits and CPU labels and the run crashes.
``pytest --fake-cuda`` makes this machine behave as the GPU one.
"""

import torch
from torch import nn


def pick_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def batches(steps: int, seed: int = 0):
    generator = torch.Generator().manual_seed(seed)
    weights = torch.randn(8, 3, generator=generator)
    for _ in range(steps):
        features = torch.randn(32, 8, generator=generator)
        yield features, (features @ weights).argmax(1)


def train(steps: int = 20) -> list[float]:
    device = pick_device()
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    losses = []
    for features, labels in batches(steps):
        logits = model(features.to(device))
        loss = nn.functional.cross_entropy(logits, labels)  # the labels stayed on the CPU
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    print(train())
