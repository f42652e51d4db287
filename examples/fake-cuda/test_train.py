"""Passes with plain ``pytest``; fails under ``pytest --fake-cuda`` with CUDA's own message."""

from train import train


def test_training_lowers_the_loss():
    losses = train()
    assert losses[-1] < losses[0]
