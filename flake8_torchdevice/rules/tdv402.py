"""TDV402 (opt-in): a literal CUDA ordinal 0; the visitor is TDV401's."""

from __future__ import annotations

from .tdv401 import HardCodedOrdinal


class HardCodedCudaZero(HardCodedOrdinal):
    CODE = "TDV402"
    NAME = "hard-coded-cuda-zero"
    SUMMARY = 'a literal CUDA ordinal 0 (`"cuda:0"`, `.cuda(0)`, `device=0`)'
    MESSAGE = (
        'hard-coded CUDA device 0 puts every process on the first GPU; use "cuda" (the '
        "current device) or a device taken from configuration or LOCAL_RANK"
    )
    DEFAULT_ENABLED = False

    @staticmethod
    def wants(ordinal: int) -> bool:
        return ordinal == 0
