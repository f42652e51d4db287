"""TDV601: a value proven on the CPU meets a value proven placed on a device."""

from __future__ import annotations

from .._lazy import cst
from ..analysis.code import code_of
from ..analysis.flow import FlowReports
from ..analysis.flow.words import COLLECTIVE_WORDS, LIGHTNING_STEPS
from ..analysis.layers import STATEFUL_LAYERS
from ..analysis.vocabulary import FACTORY_NAMES
from ..rule import DEFINITION, Rule
from ..words import LOCAL_CLASS_CALLS, PROJECT_MODEL_CALLS


class CpuMeetsPlaced(FlowReports, Rule):
    r"""**On by default.** Precision on held-out user code: 77 of 78 findings true or latent (98.7%) over the 1,171
    held-out projects of 1,210 with the rules of 2026-12-08, session of 00:45 (V146's first read 2 of 2: a profiling
    notebook's CPU input to the model it moved to CUDA when available, true; a stale notebook's, latent); 75 of 76
    findings true or latent (98.7%) over the 1,095
    held-out projects of 1,134 with the rules of 2026-12-07, session of 22:23 (its CPU module handed to the one call of
    a function that feeds it placed batches, first read 1 of 9 findings, 8 of TDV601 and 1 of TDV603: true, a
    transfer-learning script's ResNet never moved; the 8 false, gone before it landed: a device the one caller gives as `'cpu'`, a placed module moved back by
    `model.cpu().eval()`); 74 of 75 (98.7%) with the rules of 2026-12-07, session of 20:18 (its submodule class's first read 2 of
    2, a tutorial's Neural ODE encoder run on CPU points; post-hoc: a layer whose weight and
    bias a notebook fills with CUDA tensors is no CPU layer, one false finding gone; its tuple helpers' first read 0
    of 1, a script's `cast(nn.Module, torch.compile(model))` read as a project model, gone before it landed:
    Python's own modules build none); 72 of 74 (97.3%) with the rules of 2026-12-07, session of 17:19 (its project models' first read 13 of
    19: 6 false, gone before it landed: a wrapper given the placed model, two helpers given it, three reads of a
    model attribute its forward makes; its first-bound names and `add_graph`, 2 of 2); 57 of 59 (96.6%) with the rules of 2026-12-07, session of 14:42 (its late-binding class's first read 2 of
    2: two VAE tests' `setUp` models placed with `.cuda()` and fed CPU batches); 39 of 39 findings true or latent over the held-out
    batches v2-v112 with the rules of 2026-12-06, session of 04:33 (v110's first read 2 of 2: the ImageNet example's
    CPU meter tensor handed to an NCCL `all_reduce`); 34 of 34 over v2-v101 with the rules of 2026-12-06, session of 23:49 (the unpacked-outputs change's first read 2 of 2:
    a CPU `torch.tensor([])` accumulator `torch.cat`'ed with `_, predicted = torch.max(outputs, 1)` of a placed
    model); 30 of 30 findings true or latent over the held-out
    batches v2-v78 with the rules of 2026-12-03, session of 13:59 (the star-import change's first read 1 of 1,
    `torch.eye(n)[labels]` with the labels moved to the device); 29 of 29 findings true or latent over the held-out
    batches v2-v75 with the rules of 2026-12-03, session of 11:17 (a tuple or list of CPU tensors handed to a placed
    module read since: no finding added or removed over v2-v72; v73's first read 1 of 1, a CPU index list read
    through a mask of image ids moved to the device); 28 of 28 findings true or latent over the held-out batches
    v2-v72 with the rules of 2026-12-03, session of 08:18 (a torchvision builder's model and a loss given a CPU
    class weight read as CPU layers since: no finding added or removed on the corpus; v70 and v71 give none; v72's
    first read 2 of 2, a model of the file's own class never moved and fed moved images); 22 of 22 findings true or
    latent over the held-out batches v2-v64 with the rules of 2026-12-03, session of 02:59 (v64's first read 2 of 2,
    an AlexNet never moved and fed CUDA images; v63's 2 of 2: a CPU `torch.arange` of positions handed to a placed
    Transformer, a CPU tensor minus a placed layer's weight); 15 of 15 over the held-out batches v2-v53 with the
    rules of 2026-12-02, session of 13:46 (v53's first read: 0 of 2, CPU inputs to a model wrapped in
    `nn.DataParallel`, which scatters them: not reported since); 15 of 15 over v2-v45 (a model of the file's own
    class never moved: 2 of 2 on the corpus when added, 2 of 2 at v45's first read); 2 of 13 at its first read
    (docs/precision.md), whose 11 false findings (CTC lengths, 0-dim norms taken to the CPU, factories after
    `torch.set_default_device`) are not reported since.

    ## What it does
    Follows, through each function (or one module's top level), what the code proves about
    where each value lives, and flags the place where a CPU value and a placed value meet in
    an operation that needs one device. A function also sees what the module's code proves
    (a model placed at module level or in the `if __name__ == "__main__":` block; not a name some
    function declares `global`, which it may rebind), a
    top-level function what the module's own calls give it (`summarize(model)` after
    `model = Net().to(device)`: its parameter `model` is placed) and what another top-level function
    that moves something gives it (`main()` placing the model and calling `train(model, loader)`; a CPU
    value too where that call is the function's only one: `train(model, data, criterion)` handed a loss
    built around a CPU `pos_weight`, or `train(net, loader)` handed `net = Net()` by a caller that only builds it,
    never moved, which `train` feeds the batches it moves to the device; and what such a function returns to it, or to module code that moves
    something, where every return of its own walk is on the CPU: `x = load_input(path)` of a helper returning
    `TF.to_tensor(...)`, a notebook's `batch = pad_batch(histories)`; and what a top-level function that moves
    something returns to any function or module code calling it, where every return of its own walk is placed by the
    function itself: `model = build_model()` of `def build_model(): return Net().to(device)`, not a helper with a
    parameter that chooses the device, `use_cuda=False`, `device=...`, whose caller decides; where every return is a
    tuple of one length, each name it is unpacked into, part by part: `age_map, mask = generate_age_map(image)` of
    `return age_map.to(device), mask`, and each part read by a literal position, `generate_age_map(image)[0]`), a method what its
    class's `__init__` proves of `self.x`, then a `setup` / `build` method of the class (issue 22's setup step; a
    fixture places a predictor's model in `setup()`) (`self.model = Net().to(device)`; also an attribute that any
    other method binds, `fit()` or unittest's `setUp()`, where every binding of it in the class moves it to a device
    or is `None` and none moves it back, post-hoc, two held-out tests' `setUp` models fed a CPU batch; also an attribute it makes
    on one path only, `if self.policy.recurrent: self.state = torch.zeros(n, size)`, which does not
    exist on the other), what another method
    of its class that moves something calls it with (`self.score(out)`) and what one returns to
    such a method when every return of it is placed (not in a `torch.nn` module); a list that only
    placed values are appended to concatenates to a placed tensor:

    - CPU: a tensor factory without `device=` (not 0-dim), `torch.from_numpy`,
      `torch.as_tensor` of a NumPy value, `torch.tensor` of the function's own parameter (`torch.tensor(tokens)`: a
      copy of the caller's data; a tensor given there is copied where it lives, with torch's warning to use
      `clone().detach()`; not `torch.as_tensor` / `torch.asarray`, made to keep a tensor where it is), a list
      display or comprehension of CPU tensors and what `torch.stack` / `torch.cat` / `pad_sequence` make of it
      (stacking gives 0-dim items a dimension; `dim=1` and other literal options are no tensors), torchvision's
      image conversions (`transforms.ToTensor()(image)`,
      `TF.to_tensor(image)`, `pil_to_tensor(image)`), what a tokenizer or processor returns with
      `return_tensors="pt"` (`tokenizer(text, return_tensors="pt")`, its `["input_ids"]`, `tokenizer.encode(...,
      return_tensors="pt")`), `.cpu()`, `.to("cpu")`, results of ops on CPU
      values (indexing that drops no dimension too: `image[None]`, `x[:, 1:]`; arithmetic with number literals,
      `image * 2.0 - 1.0`); a
      `torch.nn` layer with weights the function builds without `device=` (`nn.Linear(4, 2)`, a
      `Sequential` of such layers), a model a torchvision builder makes (`models.resnet18(weights=...)`,
      `models.detection.fasterrcnn_resnet50_fpn()`, `get_model("vit_b_16")`; not one given `**options`:
      torchvision places nothing it builds), a Hugging Face transformers model loaded with `from_pretrained` under a
      name the module imports from `transformers` (`AutoModelForSequenceClassification.from_pretrained(name)`; a class
      whose name says `Model` or `For`; not one given `device_map=`, `load_in_8bit=`, `load_in_4bit=`,
      `quantization_config=`, `tp_plan=` or `**options`, which may place it), a loss given a CPU class weight of one
      dimension or more
      (`nn.CrossEntropyLoss(weight=torch.tensor(w))`, `nn.BCEWithLogitsLoss(pos_weight=torch.tensor([r]))`: the
      loss keeps it as a buffer, so its placed inputs meet it), or a module of a class of this file that makes
      weights (a stateful layer, a `Parameter`, a buffer), whose code names no move nor device and keeps no module it is
      given (`model = Classifier()` where `Classifier` builds `nn.Linear` layers), and never moves:
      called with a placed tensor, its weights meet it
      (not one built under `with torch.device(...)` or after `set_default_device`, nor one handed to
      another call, `train(model)`, or bound to a second name, `self.model = model`: either may move it;
      a move under another name, `placed = model.cuda()`, or through the methods that return the module,
      `model.eval().to(device)`, moves it too; a layer built in `__init__` follows its module's `.to()`; one module
      code builds is a CPU layer in the functions as well where the whole file binds its name once and otherwise only
      calls it or its methods that leave it in place, `model(x)`, `model.eval()`, `model.parameters()`,
      `model.load_state_dict(state)`: no code of the file moves it; so is one `__init__` (or a setup method) of a
      plain class binds to `self.net`, a class that is no module (no `forward`, no base but `object`, `ABC` or
      such classes of the file: an imported base may be a module), where the whole file binds `.net` once and otherwise only calls
      it or such methods, or a method of a module class of this file, `self.policy.distribution(x)` (post-hoc,
      from the recall list's agents that move each observation but never their network); a model of a constructor
      the file imports from its own project (`from models.vgg import vgg16_bn`, then `net = vgg16_bn()`), where the
      file reads the bound name as a module with weights (`net.parameters()`, `net.state_dict()`), the module
      imported from is no known library (`torchvision`, `transformers`, Whisper, CLIP and others place or build
      models their own way) nor Python's own (`typing.cast`, `copy.deepcopy` hand back what they are given), the
      name does not say it builds, loads or prepares (`build_model`, `get_backbone`, `load_model`: such a helper may
      place what it returns) and no argument speaks of a device (`Net(device)`, `Net(args.gpu)`) nor holds a module
      or tensor the code knows (`ModelMeta(model=model)`, `Compiled(torch.compile(model))`, a wrapper that runs
      where that runs); and one wrapped in `nn.DataParallel`, under its own name (`model = nn.DataParallel(model)`) or in
      the call (`nn.DataParallel(Net())`), under `if torch.cuda.device_count() > 1:` too: the wrapper holds it
      where it is, and its forward refuses a module that is not on `device_ids[0]`. Module code that binds the
      name once in each arm of an `if` (`if n_gpu > 1: model = nn.DataParallel(Net())` / `else: model = Net()`)
      binds it once, and `print(model)` or `writer.add_graph(model, x)` leaves it where it is; a name first bound in
      some arms of an `if` chain whose other arms never name it (`else: print("unsupported")`: a later read raises
      `NameError` there) holds what those arms bind, and an arm that raises, returns or exits is no path that goes on
      (post-hoc, from the recall list's training scripts that build their network from the project's package and
      move only the batches). An attribute of such a
      module read as a tensor other than its `weight` or `bias` (`likelihood - model.kl_divergence`) is what its
      forward made, not a weight: not followed;
    - placed: `.to(<device>)`, `.cuda()`, a factory with a non-CPU `device=`, a module moved
      in place (`model.to(device)`, `model = model.to(device)`, also under methods that return the module:
      `model.to(device).eval()`, `model.eval().cuda()`), the output of a placed
      module (or of a parameter or object called with placed inputs, also as `model.forward(x)`),
      an item of a list of placed tensors (`data = [t.to(device) for t in batch]`, then `data[0]`),
      results of ops on placed values, each name a placed value unpacks into (`score, ratio = model(x)`,
      `_, predicted = torch.max(out, 1)`: a model's tuple of outputs, a tensor's rows), and what a function of this file answers when each of its returns is
      computed from placed arguments with torch functions and tensor methods that keep a device (`def
      reduce_mean(a, b): return torch.abs(a - b).mean()` given placed `out` and `gt`); a parameter the
      function uses as a module (`model.train()`, `.eval()`,
      `.parameters()`) once it is called with a placed tensor (`model(images)` after `images =
      images.to(device)`: on a GPU machine it is there, or that call would fail); a
      device that may be CUDA counts (`"cuda" if ... else "cpu"`, a run's option: `args.device`,
      `cfg.device`, `accelerator.device`, or a configuration read by its key: `config.get("General", "device")`,
      `cfg["device"]`), and a value placed on one branch (`if args.cuda: model.cuda()`) is
      placed after it: on a GPU machine that branch runs (so a value such a branch moves
      back, `if use_gpu: x = x.cpu()`, is on the CPU after it); the `batch` of a Lightning
      step hook (`training_step`, `validation_step`, `test_step`, `predict_step` of a
      `LightningModule`, or of any class in a file that imports Lightning), and what it
      unpacks into (`x, y = batch`): the Trainer moved it to the module's device;
    - where they meet: a placed module called with a CPU tensor (also through a method of
      its own, `vae.decode(z)`, for a module class of this file, or its `generate(...)`, or through a submodule called
      by a name that says module, `net.encoder(src)`, `ddpm.model(x)`, `gan.generator(z)`), or with a tuple or list of
      CPU tensors (an LSTM's initial state, `lstm(x, (h0, c0))`; `detector([image])`), arithmetic, matmul and
      comparisons, `torch.cat` / `torch.stack` / `torch.where` and other torch functions,
      `F.*` functionals, loss modules and functions, `torch.onnx.export(placed_model, cpu_input)`,
      a gradient and its output (`torch.autograd.grad(out, x, grad_outputs)`,
      `torch.autograd.backward(out, grads)`, `out.backward(gradient)`; a 0-dim gradient autograd moves itself),
      a CPU tensor indexed by a placed one (`cpu_table[placed_ids]`), torch's test comparisons
      (`torch.testing.assert_close(out, expected)`, `assert_allclose`; not with `check_device=False`),
      which check that both sides share a device before their values, and a CPU tensor (0-dim
      ones too) handed to a `torch.distributed` collective (`all_reduce`, `broadcast`,
      `all_gather`, `send`, ...) in a file that starts an NCCL group
      (`init_process_group("nccl")`, a `--dist-backend` defaulting to `"nccl"`): NCCL serves
      CUDA tensors only.

    ## Why is this bad?
    Torch never moves tensors implicitly. A model moved to the GPU and fed a tensor built on
    the CPU, or a GPU output compared with CPU labels, fails on the first batch of the first
    GPU run, after every CPU test passed.

    ## Example
    ```python
    model = torchvision.models.resnet18().to(device)
    dummy = torch.randn(1, 3, 224, 224)
    torch.onnx.export(model, dummy, "model.onnx")
    ```

    ## Use instead
    ```python
    model = torchvision.models.resnet18().to(device)
    dummy = torch.randn(1, 3, 224, 224, device=device)
    torch.onnx.export(model, dummy, "model.onnx")
    ```

    ## Fix safety
    No fix is offered: whether to move the CPU value (`x.to(device)`), create it with
    `device=`, or keep the other one on the CPU is the author's choice.

    ## When it does not report
    - values whose device the code does not prove: parameters, attributes other than those `__init__` (or a setup
      or build method) places,
      results of unknown calls, names re-bound in branches or loops that disagree (unless one of them places it),
      and names deleted;
    - a layer built on the CPU whose own weight or bias the code then replaces with a placed tensor
      (`linear.weight.data = W`, `linear.bias = b`, W on the device): its parameters are where those tensors are
      (post-hoc, from v126's first read, a notebook comparing a custom CUDA layer with torch's); a placed
      submodule set on a model (`net.head = head.cuda()`) moves nothing else, and the model is still read as above;
    - a batch of a loader a framework prepared (`model, opt, loader = accelerator.prepare(...)`, then `for X in
      tqdm(loader)`), its elements and copies of them (`torch.tensor(X[0], dtype=fp16)`: `torch.tensor` of a tensor
      keeps its device): the framework put them on its device (post-hoc, from v132's first read);
    - 0-dim CPU tensors (`torch.tensor(1.0)`) and Python scalars, which mix with CUDA tensors legally, and a loaded
      checkpoint's entries; data whose shape the code does not show (`torch.tensor(scale)`) counts as 0-dim too,
      except when it is given to a placed module (`model(torch.tensor(read_rows()))`): a module's weights take no
      CPU scalar, and except when an in-place op writes a placed value into it (`total = torch.tensor(0.)`, then
      `total += loss`): a CPU tensor may be read beside CUDA tensors, never written to (post-hoc, from recall batch
      110's MAML `outer_loss`; on a CPU machine the meta device lets that write pass and leaves `total` on the CPU,
      so the proof checks where it stayed: "the accumulator stayed on cpu");
    - a torch.nn loss built from literals and then moved (`criterion = nn.CrossEntropyLoss().cuda()`): it holds no
      tensor, so its inputs meet each other, not the loss (a loss given a `weight` tensor holds it and is placed);
    - a module wrapped in `nn.DataParallel`, which scatters a forward's inputs to its devices (a CPU input is
      moved for it), or in `DistributedDataParallel` given `device_ids`, which moves them to its device, a module built around one (`TSN(batch_size, nn.DataParallel(net)).cuda()`), whose forward
      hands its input to the wrapper, and one whose submodule is wrapped (`model.features =
      nn.DataParallel(model.features)`);
    - modules of classes defined in the same file whose code may move what it gets: code (or a same-file class or
      function it names) that calls `.to` / `.type` or names a device (`self.device`, `use_cuda`, `to_device`), or
      a base from another library; a class built only from `torch.nn` bases whose code names no move is followed;
      a class that keeps a module its `__init__` is given and calls it (`self.model = model`, then
      `self.model(x)`), which runs where that module is;
      arguments kept on the CPU on purpose (`lengths` for `pack_padded_sequence`) or named as a batch's metadata
      (`data_info`, `file_names`, `paths`);
    - a factory without `device=` after `torch.set_default_device(...)` (or
      `set_default_tensor_type`) in the same scope, or anywhere in a function of a module
      whose own code sets one (`if args.cuda: torch.set_default_tensor_type(
      "torch.cuda.FloatTensor")`): it lands on that default device;
    - the targets and lengths of a CTC loss (`nn.CTCLoss`, `F.ctc_loss`, or any loss called with four positional
      arguments: log-probabilities, targets, input lengths, target lengths, also one moved to the device such as
      warp-ctc's `CTCLoss().cuda()`), which CTC takes on the CPU too (cuDNN's CTC requires CPU lengths, warp-ctc
      CPU labels);
    - code under `pytest.raises` / `assertRaises`, CPU-only branches (`if device.type == "cpu"`,
      `if not torch.cuda.is_available()`, the `else` of a CUDA check, and the `else` of the code's own GPU
      switch, `if self.gpu_mode:` / `if args.cuda:`, also asked as a number, `if args.cuda > 0:` / `if use_gpu == 1:`
      (post-hoc, from a faster-rcnn demo's normalisation branch): the run with the switch off, where what it moves
      stayed put);
    - a factory without `device=` meeting a function's input that the function did not move: TDV502 (opt-in)
      reports that; once the input is moved (`x = x.to(device)`), or the module's own code calls the function
      with a placed value, the meeting is TDV601's;
    - a loader element left on the CPU while its sibling was moved: TDV602 reports that;
    - a placed tensor indexed by CPU indices (`placed[torch.arange(4)]`): torch accepts indices on the CPU;
    - a collective given a `group` (it may be a Gloo group kept for CPU tensors), collectives in a file that
      never names NCCL, and those in a function decorated with a skip whose test excludes NCCL
      (`@skip_if(BACKEND == "nccl", ...)`, as torch's own distributed tests keep their CPU-tensor cases).

    ## The error torch raises
    On a GPU machine:

    ```
    RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!
    ```

    for a gradient made on the CPU for an output on the GPU (`torch.autograd.grad(out, x,
    torch.ones(n, 1))`, `out.backward(torch.ones(n, 1))`):

    ```
    RuntimeError: invalid gradient at index 0 - expected device cuda:0 but got cpu
    ```

    and on a CPU machine, with the meta device standing in:

    ```
    RuntimeError: invalid gradient at index 0 - expected device meta but got cpu
    ```

    For a CPU tensor in an NCCL collective (also on a CPU machine, where a group whose only
    backend serves CUDA, `init_process_group("cuda:gloo")`, stands in for NCCL):

    ```
    RuntimeError: No backend type associated with device type cpu
    ```

    and, for a CPU tensor indexed by a CUDA one:

    ```
    RuntimeError: indices should be either on cpu or on the same device as the indexed tensor (cpu)
    ```

    On a CPU machine, with the meta device standing in for the GPU:

    ```
    RuntimeError: Tensor on device meta is not on the expected device cpu!
    ```

    or, where the CPU operand comes first,

    ```
    RuntimeError: Tensor on device cpu is not on the expected device meta!
    ```

    For a recurrent layer's initial state left on the CPU (`lstm(x, (h0, c0))`), on a CPU machine with the meta
    device standing in, and on a GPU machine as its users report it (`found input tensor at cuda:0 and hidden tensor
    at cpu`):

    ```
    RuntimeError: Input and hidden tensors are not at the same device, found input tensor at meta and hidden tensor at cpu
    ```

    For torch's test comparisons (`torch.testing.assert_close`), on a GPU machine:

    ```
    AssertionError: The values for attribute 'device' do not match: cuda:0 != cpu.
    ```

    and on a CPU machine, with the meta device standing in:

    ```
    AssertionError: The values for attribute 'device' do not match: meta != cpu.
    ```

    (The meta device accepts a CPU tensor indexed by a meta one: that case is proven on a GPU only.)
    """  # noqa: E501 -- quotes torch's error messages verbatim

    CODE = "TDV601"
    NAME = "cpu-value-meets-placed-value"
    SUMMARY = "a value proven on the CPU meets a value proven on a device in one operation"
    MESSAGE = "{cpu} is on the CPU and {placed} is on the device; move it with .to(device) or create it with device="
    # Placed: .to / .cuda / a factory's device=, a collective, a Lightning step's batch. CPU: a
    # factory, .cpu(), a destination that names the CPU (.to("cpu"), .to(cpu_device)), or a layer
    # built here (nn.Linear(4, 2), a torchvision model's builder, a transformers model's from_pretrained, or
    # Net() of a same-file class that never moves), a tokenizer's return_tensors="pt".
    NEEDS = [
        {".to(", ".cuda(", "device="} | COLLECTIVE_WORDS | LIGHTNING_STEPS,
        {"." + name + "(" for name in FACTORY_NAMES} | {"*cpu"} | {"." + name + "(" for name in STATEFUL_LAYERS}
        | {"ToTensor", "to_tensor", "return_tensors", LOCAL_CLASS_CALLS, PROJECT_MODEL_CALLS, "torchvision",
           ".from_pretrained("},
    ]
    TOGETHER = DEFINITION  # a function, with the module and its class's __init__ facts

    def _findings(self, flow):
        return flow.meets

    def _message(self, meet) -> str:
        if meet.cpu.loss and isinstance(meet.node, cst.Call) and code_of(meet.node.func) == meet.cpu.label:
            return (  # a loss given a CPU class weight, never moved, called
                f"{meet.cpu.label}'s class weight is on the CPU and {meet.placed.label} is on the device where they "
                f"meet; move the loss with .to(device) or make the weight with device="
            )
        func = meet.node.func if isinstance(meet.node, cst.Call) else None
        if meet.cpu.layer and func is not None and meet.cpu.label in (
            code_of(func), code_of(func.value) if isinstance(func, cst.Attribute) else None  # ``net.decode(z)``
        ):
            # a module built here and never moved, called: its weights meet the placed input
            return (
                f"{meet.cpu.label}'s weights are on the CPU and {meet.placed.label} is on the device where they "
                f"meet; move the module with .to(device) before calling it"
            )
        return (
            f"{meet.cpu.label} is on the CPU and {meet.placed.label} is on the device where they meet; "
            f"move it with .to(device) or create it with device="
        )
