"""DataParallel under fake CUDA: torch's own constructor and device check run unchanged (so a
module left on the CPU fails as on two GPUs); the scatter, replicas and gather that need real
GPUs become one forward pass on ``device_ids[0]`` whose output lands on ``output_device``."""

from __future__ import annotations

import torch
from torch.nn.parallel import DataParallel


def _to(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_to(item, device) for item in value)
    if isinstance(value, dict):
        return {key: _to(item, device) for key, item in value.items()}
    return value


def scatter(self, inputs, kwargs, device_ids):
    device = torch.device("cuda", device_ids[0])
    return (_to(tuple(inputs), device),), (_to(dict(kwargs or {}), device),)


def replicate(self, module, device_ids):
    return [module]


def parallel_apply(self, replicas, inputs, kwargs):
    return [replicas[0](*inputs[0], **kwargs[0])]


def gather(self, outputs, output_device):
    return _to(outputs[0], torch.device("cuda", output_device))


PATCHES = [(DataParallel, name, fn) for name, fn in
           (("scatter", scatter), ("replicate", replicate), ("parallel_apply", parallel_apply), ("gather", gather))]
