"""TDV502: a tensor made without ``device=`` meets a function's inputs (opt-in).

The decision is ``analysis/factory_meets.py``'s, for every function but a model's
``forward`` and a metric's ``update`` (TDV504's, on by default).
"""

from __future__ import annotations

from ..analysis.factory_meets import FactoryMeetings
from ..analysis.vocabulary import FACTORY_NAMES
from ..rule import Rule


class FactoryWithoutDevice(FactoryMeetings, Rule):
    r"""## What it does
    Inside a function or method (other than a module's `forward` or a metric's `update`, the
    helpers a forward hands its input to, and module-level loss functions: TDV504 decides those,
    on by default), flags a torch factory call without `device=`
    (`torch.zeros(n)`, `torch.arange(n)`, `torch.tensor([...])`, `torch.eye(n)`, ... under any
    alias) whose result is then used together with a tensor derived from the function's
    parameters in an operation that needs one device:
    - arithmetic or comparison with it (`x - centre`, `positions < lengths[:, None]`);
    - an in-place op on either side (`total += batch.sum(0)`, `hist.index_add_(0, idx, w)`);
    - `index_put_`/`index_add_`/`scatter*_`/`masked_fill(_)`/`gather`/`index_select`/`take_along_dim` and similar
      methods;
    - `torch.cat`/`torch.stack`/`torch.where` and other torch functions taking both;
    - indexing the CPU tensor with input-derived indices in an assignment, or reading it through a mask of them
      written as a comparison (`torch.arange(n)[x > 0]`);
    - in a method of a module, handing it to one of the module's layers with weights
      (`self.pos_emb(torch.arange(n))`; TDV504's page says which layers count).

    The rule follows the data, not names: a parameter counts as a tensor input once the
    function uses it as one (a tensor attribute or method such as `x.shape`, `x.float()`,
    `x[:, None]`, passing it to a torch function or, in a module's method, to one of the
    module's layers with weights, or a `Tensor` annotation). Values derived from it flow through
    the module's own layers and helpers, a list of them handed to one (`self.fpn([x2, x3])`), and
    a list comprehension or generator given to a torch function
    (`torch.cat([self.head(f) for f in features])`).

    Not flagged:
    - `*_like` factories and `Tensor.new_*` (they inherit the input's device);
    - calls with `device=` (or `**kwargs` that may carry it);
    - factories moved or converted at once: `.to(...)`, `.type_as(...)`, `.cuda(rank)`,
      `.item()`, `.tolist()`, a cast to a type that may be CUDA's (`.type(self.FloatTensor)`, chosen
      as `torch.cuda.FloatTensor if use_cuda else torch.FloatTensor`; not `.type(torch.float64)` nor
      `.type(torch.FloatTensor)`, which stay on the CPU), and a bare `.cuda()` under a CUDA check
      or the code's GPU switch (one outside them goes to the current GPU, not the input's device,
      and is flagged at the `.cuda()`, as TDV504 says);
    - a 0-dim tensor (`torch.tensor(2.0)`, `torch.zeros(())`) in an out-of-place op:
      PyTorch allows CPU scalars next to CUDA tensors (in-place into it is still flagged);
    - `torch.tensor(x)`/`torch.as_tensor(x)` of an input (they keep its device);
    - data-loading code: `__getitem__`, `__iter__`, `__next__`, `__len__`, functions whose
      name contains `collate`, and every method of a class named (or deriving from a class
      named) `*Dataset`, `*Sampler`, `*DataPipe`, `*Processor`, `*Preprocessing`,
      `*Transform` or `*Collator`: they build CPU batches on purpose;
    - factory calls inside strings and comments (docstring examples), and a factory that is
      the whole value of a keyword argument other than a tensor operand
      (`add_state("n", default=torch.zeros(3))`);
    - `out=` (it decides the device);
    - a module whose code sets a default device that may be CUDA at import (`torch.set_default_device(device)`):
      every factory without `device=` is made there (TDV504's page says which calls count);
    - parameters never used as tensors (`torch.ones(4) * rank`), and parameters typed or
      defaulted as numbers or strings (`eps=1e-6`, `num_classes: int`).

    **Off by default.** Precision on real code: 59% on the tune split (judged findings, see
    docs/precision.md; 16% counting `latent` as false); the held-out figure is in
    docs/precision.md. Most tune findings are helpers that only ever see CPU inputs
    (test and demo data, models kept on CPU by design, inputs that are not tensors) or
    code following a `set_default_device` convention: whether an input can be on a GPU
    is not visible in the function. Turn it on with `extend-select = TDV502` (flake8) or
    `torchdevice --select TDV502`.

    ## Why is this bad?
    A factory without `device=` creates its tensor on the CPU. The function works in every
    CPU test, then fails as soon as its inputs live on a GPU. Metric helpers, masks built in
    `forward`, and accumulators are the usual victims.

    ## Example
    ```python
    def _get_stats(preds, target, num_classes: int):
        classes = torch.arange(num_classes)
        return (target[:, None] == classes).sum(0)
    ```

    ## Use instead
    ```python
    def _get_stats(preds, target, num_classes: int):
        classes = torch.arange(num_classes, device=target.device)
        return (target[:, None] == classes).sum(0)
    ```

    ## Fix safety
    No fix is offered: which input's device to use (and whether the tensor should rather be
    a registered buffer) is the author's choice. The message names the input the rule saw,
    `device=<input>.device`.

    ## When it does not report
    - factory calls given `device=`, `out=` or `**kwargs`, or whose arguments mention a device;
    - tensors that never meet a function input in an operation that needs one device; inputs without evidence of being
      tensors (no tensor attribute or method used on them, no `Tensor` annotation);
    - 0-dim factories (`torch.tensor(1.0)`) and Python scalars, which mix with CUDA tensors legally;
    - a factory sent on with `.cuda()` in a module whose own code places on CUDA unguarded at import (a CUDA-only
      script): its `.cuda()` goes to the current GPU, where everything else is (shared with TDV504);
    - data-loading code (`__getitem__`, collate functions, Dataset / Sampler classes) and inputs that go through
      `.numpy()` (CPU code by design);
    - a module's `forward` and a metric's `update` outside test modules, the helpers a forward hands
      its input to, and module-level functions that call a `torch.nn.functional` loss: TDV504 reports
      those.

    ## The error torch raises
    On a GPU machine:

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
    ```

    On a CPU machine, with the meta device standing in for the GPU (out-of-place ops with
    n-dim operands check devices):

    ```
    RuntimeError: Tensor on device cpu is not on the expected device meta!
    RuntimeError: Tensor on device meta is not on the expected device cpu!
    ```

    In-place ops into a CPU tensor do not raise on meta; the accumulator fixture checks its
    post-condition instead: `AssertionError: the total stayed on cpu`.
    """

    CODE = "TDV502"
    NAME = "factory-without-device-mixed-with-input"
    SUMMARY = "tensor created without `device=` and combined with a function's input"
    DEFAULT_ENABLED = False  # 59% tune precision, 16% strict (docs/precision.md)
    NEEDS = FACTORY_NAMES
    MODEL_ENTRIES = False  # every function but a model's entry point (TDV504 decides those)
