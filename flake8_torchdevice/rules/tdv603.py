"""TDV603: ``.numpy()`` / ``np.asarray`` of a tensor placed on a device."""

from __future__ import annotations

from ..analysis.flow import FlowReports
from ..rule import DEFINITION, Rule


class NumpyOfPlacedTensor(FlowReports, Rule):
    r"""## What it does
    Flags `t.numpy()` (without `force=True`), `np.asarray(t)` and `np.array(t)` where the
    code proves `t` is placed on a device (moved with `.to(device)` / `.cuda()`, created
    with `device=`, the output of a placed module, or computed from such values), with no
    `.cpu()` / `.to("cpu")` in between. The model may be placed in the function, at module
    level or in `__init__`; a device that may be CUDA counts
    (`torch.device("cuda" if torch.cuda.is_available() else "cpu")`).

    ## Why is this bad?
    NumPy arrays live in host memory. `.numpy()` on a CUDA tensor raises instead of copying;
    `out.detach().numpy()` after a GPU forward is the usual form.

    ## Example
    ```python
    out = model(x.to(device))
    preds = out.detach().numpy()
    ```

    ## Use instead
    ```python
    out = model(x.to(device))
    preds = out.detach().cpu().numpy()
    ```

    ## Fix safety
    No fix is offered; the message names the fix (`.cpu()` before `.numpy()`).

    ## When it does not report
    - tensors whose device the code does not prove (parameters, attributes `__init__` does not place, unknown
      calls);
    - `.cpu()` or `.to("cpu")` anywhere before (`torch.cat(outs).numpy()` after `outs.append(y.cpu())`),
      `.numpy(force=True)`, including a move back under the CUDA check that placed the value
      (`if use_gpu: imgs, outputs = imgs.cpu(), outputs.cpu()`): on a GPU machine that branch runs;
    - `.tolist()`, `.item()` and `float(t)`, which copy to the host themselves;
    - code under `pytest.raises` / `assertRaises` and CPU-only branches.

    ## The error torch raises
    On a GPU machine:

    ```
    TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.
    ```

    On a CPU machine, with the meta device standing in for the GPU:

    ```
    TypeError: can't convert meta device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.
    ```
    """  # noqa: E501 -- quotes torch's error messages verbatim

    CODE = "TDV603"
    NAME = "numpy-of-placed-tensor"
    SUMMARY = "`.numpy()` / `np.asarray()` of a tensor placed on a device, without `.cpu()`"
    MESSAGE = "{value} is on the device; call .cpu() before .numpy()"
    NEEDS = [{".numpy(", "asarray(", "array("}, {".to(", ".cuda(", "device="}]
    TOGETHER = DEFINITION  # a function, with the module and its class's __init__ facts

    def _findings(self, flow):
        return flow.numpys

    def _message(self, meet) -> str:
        return f"{meet.placed.label} is on the device; NumPy needs host memory: call .cpu() before .numpy()"
