"""TDV504: a tensor made without ``device=`` in a model's ``forward`` meets its input.

The same data-following decision as TDV502 (one visitor, ``analysis/factory_meets.py``),
for the functions whose inputs are known to live where the model lives: a module's
``forward`` and a metric's ``update``; and, in a module's other methods, for the state the
module registers and its layers (``analysis/module_state.py``). TDV502 decides the rest.
"""

from __future__ import annotations

from ..analysis.factory_meets import FactoryMeetings
from ..analysis.vocabulary import FACTORY_NAMES, FUNCTIONAL_LOSSES
from ..rule import Rule


LOSS_WORDS = frozenset(name.rpartition(".")[2] for name in FUNCTIONAL_LOSSES)


class FactoryWithoutDeviceInForward(FactoryMeetings, Rule):
    r"""## What it does
    In the `forward` of a class that derives from `torch.nn.Module` (under any alias, through
    a class of the same file that does, or through Lightning's `LightningModule`), or the
    `update`/`forward` of a
    `torchmetrics.Metric`, flags a torch factory call without `device=` (`torch.zeros(n)`,
    `torch.arange(n)`, `torch.ones(n, n).tril()`, `torch.tensor([...])`, ...) whose result
    then meets the method's input in an operation that needs one device: arithmetic or a
    comparison (`x + pad`, `positions < lengths[:, None]`), an in-place op on either side,
    `masked_fill`/`index_add_`/`gather` and similar methods, `torch.cat`/`stack`/`where`, matrix products and
    fused multiply-adds (`torch.mm`/`mv`/`addmm`/`addcmul`/`tensordot`/`kron`), an analysis window
    handed to `torch.stft`/`istft` with the input (`window=torch.hann_window(n)`; post-hoc, from a held-out fix of
    recall batch 100, an STFT front end's forward), or
    indexing one with the other in an assignment, or reading the CPU tensor through a mask of the
    input written as a comparison (`torch.arange(n)[scores > 0]`; a 0-dim index such as
    `x.argmax()` is read as a number and not flagged). Also when the CPU tensor is handed to one
    of the module's own layers with weights (`self.pos_emb(torch.arange(n))`, an LSTM's
    `(h0, c0)`): a layer its `__init__` (or a base class's, in this file) builds from a
    `torch.nn` class that holds state (`Embedding`, `Linear`, `Conv*`, `LSTM`/`GRU`/`RNN`,
    norms, attention, transformer layers, containers) or from a module class of the same
    file, in every branch that binds it (`nn.GRU` under one option, `nn.LSTM` under another); or a
    layer the forward takes from `self` and runs on the input: a loop over one
    (`for layer in self.rnns: out, _ = layer(out, hidden)`, also through
    `zip`/`enumerate`/`reversed`) or an item (`self.rnns[i](out, hidden)`). And when it meets the output
    of one of those layers (`self.embeddings[name](ids) + total`, `torch.cat([probs, self.proj(h)])`),
    which is on the module's device whatever the layer was given (a mapping's item, a token id made in
    the forward); a `.cuda()` of the factory is not flagged there: in CUDA-only code it goes to the current
    GPU, where the module is (post-hoc, from recall misses). `Variable(t)` is `t`.
    Closures defined in `forward` count as `forward`, and so does a module-level function of the
    same file that such a `forward` hands one of its own parameters to (`x = pad(x, self.lcm)`; also
    all of them: `def forward(self, *inputs): return match(*inputs)`):
    inside it, the input lives where the model lives. So does a module-level loss function: one
    that hands its parameters, or values computed from them, to a `torch.nn.functional` loss
    (`F.smooth_l1_loss(est[mask], gt[mask])`, `F.cross_entropy(logits, labels, weight=w)`) and
    returns what it computes: its inputs are a model's outputs and their targets (a training
    step that calls `backward()` and returns nothing is script code, TDV502's). In such a function a CPU total
    (`loss = torch.Tensor([0])`, then `loss = loss + F.smooth_l1_loss(...)`) or a CPU class-weight
    vector handed to the loss (`weight=torch.ones(n)`) is flagged. CTC's targets and lengths,
    which `F.ctc_loss` takes on the CPU, are not. An optional argument's default made without
    `device=` counts whether written as a statement (`if weights is None: weights = torch.ones(n)`)
    or as one expression (`weights = torch.ones(n) if weights is None else weights`): a caller that
    passes none gets the CPU tensor. So does a start replaced in one arm only (`y = torch.zeros(1, 1, 1)`,
    then `if seqs: y = torch.stack(seqs)` with no `else`): the path past the `if` keeps the CPU tensor
    and meets the input or a layer's output with it (post-hoc, from recall batch 106's WaveNet start).

    In a module's other methods (not `__init__`, nor a helper only `__init__` calls, which run before
    anyone can move the module), it flags the same factories where they meet the module's registered
    state instead of its input: a buffer or parameter its `__init__` (or a same-file base's) registers
    (`self.register_buffer("theta", ...)`, `self.w = nn.Parameter(...)`), as a rotary embedding's
    `torch.arange(n) * self.theta` when it rebuilds its cache for a longer input, or a CRF's
    `score = torch.zeros(1)` plus `self.transitions[...]`; and a CPU tensor handed to one of the
    module's layers with weights there (`self.embedding(torch.full((n, 1), 2))` in a decoding
    method). `module.to(device)` moves registered state and layers; the factory's tensor stays behind.

    It is TDV502's decision (the data followed from the parameters, the same exemptions)
    applied where the input's device is known: whoever calls `model(x)` on a GPU has moved
    the model there, and `x` with it. TDV502 (opt-in) decides every other function.

    A factory sent on with a bare `.cuda()` (`torch.zeros(1, n, h).cuda()`, `mask =
    torch.ones(n); mask = mask.cuda()`) is flagged too, at the `.cuda()`: it goes to the
    current GPU, not where the caller put the model and its input (the CPU on a laptop run,
    `cuda:1`), and meets the input there all the same. Not where the code's own check or GPU
    switch guards the move (`if self.use_gpu: h = h.cuda()`, `if torch.cuda.is_available():`,
    `t.cuda() if x.is_cuda else t`): that follows the switch that places the model.

    ## Why is this bad?
    A factory without `device=` makes a CPU tensor. The model works in every CPU test and
    crashes on its first batch on a GPU: the mask, the positions, the padding or the running
    total is on the CPU while the activations are on `cuda:0`.

    ## Example
    ```python
    class CausalAttention(nn.Module):
        def forward(self, x):
            n = x.size(1)
            scores = self.scores(x)
            mask = torch.ones(n, n).tril()
            return scores.masked_fill(mask == 0, float("-inf"))
    ```

    ## Use instead
    ```python
    class CausalAttention(nn.Module):
        def forward(self, x):
            n = x.size(1)
            scores = self.scores(x)
            mask = torch.ones(n, n, device=x.device).tril()
            return scores.masked_fill(mask == 0, float("-inf"))
    ```
    A constant mask can also be a buffer (`self.register_buffer("mask", ...)` in
    `__init__`): `.to(device)` moves it with the module.

    ## Fix safety
    No fix is offered: the device to use (`x.device`, a buffer, the input that is really
    on the model's device) is the author's choice. The message names the input the rule
    followed.

    ## When it does not report
    - a layer without weights (`nn.Dropout`, activations, most losses) or one the file does
      not show to be a module (`self.encoder = Encoder()` with `Encoder` imported);
    - a module whose code sets a default device that may be CUDA at import (`torch.set_default_device(device)`,
      `torch.set_default_tensor_type("torch.cuda.FloatTensor")`, also under an `if`; not `"cpu"`, nor a call inside a
      function): every factory without `device=` is made there, with the modules built after it (a factory sent on
      with `.cuda()` is still flagged);
    - a factory sent on with `.cuda()` in a module whose own code (outside definitions and the `__main__` block)
      places on CUDA unguarded before any branch on CUDA or CPU choice (`rnn = RNN(); rnn.cuda()` in a CUDA-only
      script or notebook): no machine without a GPU imports it, and its `.cuda()` goes to the current GPU, where that
      code put the model (post-hoc, from v125's first read: 5 false findings gone on the corpus, nothing right);
    - a start replaced in one arm of an `if` whose test asks where things are (`if x.is_cuda:`,
      `if y.device != x.device: y = y.to(x.device)`), or in every arm, or by a value the rule cannot follow;
    - code that runs only where CUDA is missing (the `else` of `if torch.cuda.is_available():`
      or of `if x.is_cuda:`, the body of `if not torch.cuda.is_available():`), or on the CPU path of
      the code's own GPU switch (the `else` of `if cuda:` / `if self.use_gpu:`): what is made
      or met there is on the CPU with everything else;
    - calls with `device=`, `out=` or `**kwargs`, `*_like` factories and `Tensor.new_*`,
      factories moved at once (`.to(x)`, `.type_as(x)`, `.cuda(rank)`, a cast to a type the model
      chose by its switch, `.type(self.FloatTensor)`, a `.cuda()` under a CUDA check or the code's GPU
      switch) or rebound after a move;
    - 0-dim factories (`torch.tensor(2.0)`) in out-of-place ops, which mix with CUDA
      tensors legally;
    - inputs never used as tensors (a tensor attribute or method, a torch function, or one of
      the module's layers with weights, as TDV502's page says), typed or defaulted as numbers or
      strings, or sent through `.numpy()` (CPU code by design);
    - in a module's methods other than `forward`, a factory that meets only the method's
      parameters (TDV502's, opt-in) or an attribute the class does not register (`self.cache = ...`);
      `__init__` and helpers that only `__init__` calls; a metric's methods other than `update`;
      classes that are not modules or metrics as far as this file shows, and test modules (a toy
      module in a test runs where the test puts it); a loss function is a module-level function that calls a
      `torch.nn.functional` loss itself (one that calls a loss object it is given, `criterion(out, y)`,
      is TDV502's).

    ## The error torch raises
    On a GPU machine:

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
    ```

    Where the CPU tensor is read through a mask on the GPU (`torch.arange(n)[scores > 0]`):

    ```
    RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)
    ```

    On a CPU machine, with the meta device standing in for the GPU (an operation of the
    two; a meta layer takes CPU indices without complaint, so the layer form is proven on
    a GPU and under fake CUDA only):

    ```
    RuntimeError: Tensor on device meta is not on the expected device cpu!
    RuntimeError: Tensor on device cpu is not on the expected device meta!
    ```

    `torch.stft` checks its window first, on any device:

    ```
    RuntimeError: stft input and window must be on the same device but got self on meta and window on cpu
    ```

    The `.cuda()` form, on a machine without CUDA (a CPU-only build; a CUDA build without a GPU
    says `Found no NVIDIA driver` or `No CUDA GPUs are available`):

    ```
    AssertionError: Torch not compiled with CUDA enabled
    ```
    """

    CODE = "TDV504"
    NAME = "factory-without-device-in-forward"
    SUMMARY = "tensor created without `device=` in a module's `forward` meets its input"
    DEFAULT_ENABLED = True
    MODEL_ENTRIES = True
    # Every finding is a factory call (``torch.zeros(``; an imported or aliased name is
    # found as such) in a ``forward`` or ``update`` method, or a closure of one: its own
    # name is a word of its definition. ``Tensor`` as an annotation or ``range`` in a loop is no
    # call. A module-level loss function is decided as a forward is: the loss it calls names it.
    # In a module's other methods it meets the module's state or layers, read through ``self`` in
    # the same method (what ``__init__`` registers is read off the ``ast``, unparsed).
    NEEDS = [{"." + name + "(" for name in FACTORY_NAMES}, {"forward", "update", "self", *LOSS_WORDS}]
    TOGETHER = True
    ENTRY_HELPERS = True  # a helper the forward hands its input to is decided as the forward
