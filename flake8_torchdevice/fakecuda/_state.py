"""What one fake-CUDA session pretends: how many GPUs, which is current, how loads behave."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from . import _errors


@dataclass
class State:
    device_count: int = 1
    saved_on_missing_gpu: bool = False
    current: int = 0
    default: "torch.device | None" = None  # a CUDA default device (torch.set_default_device)
    _devices: dict = field(default_factory=dict)

    def cuda(self, index: int) -> torch.device:
        """``cuda:index``, raising torch's error where no such GPU exists."""
        if not 0 <= index < self.device_count:
            raise _errors.invalid_ordinal()
        device = self._devices.get(index)
        if device is None:
            device = self._devices[index] = torch.device("cuda", index)
        return device

    def resolve(self, device) -> "torch.device | None":
        """The fake CUDA device ``device`` names, or None where it is not CUDA."""
        number = self.ordinal(device)
        return None if number is None else self.cuda(number)

    def ordinal(self, device) -> "int | None":
        """The CUDA index ``device`` names (the current one for a bare ``"cuda"``), not checked against the device
        count, or None where it is not CUDA."""
        if device is None or isinstance(device, bool):
            return None
        if isinstance(device, int):  # an integer device is a CUDA ordinal
            return device
        if not isinstance(device, torch.device):
            if not isinstance(device, str) or not device.startswith("cuda"):
                return None
            device = torch.device(device)
        if device.type != "cuda":
            return None
        return self.current if device.index is None else device.index
