"""The fixed twin of train.py: the labels go to the device with the features.

Under ``pytest --fake-cuda`` its test passes, as it would on a GPU.
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
        features, labels = features.to(device), labels.to(device)
        logits = model(features)
        loss = nn.functional.cross_entropy(logits, labels)  # both on the model's device
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


if __name__ == "__main__":
    print(train())
