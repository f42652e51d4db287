"""Models a file builds from a constructor imported from its own project: CPU weights until moved.

``from models.vgg import vgg16_bn`` then ``net = vgg16_bn()``: a module of the project's own package, built on
the CPU as every ``nn.Module`` is, unless its code moves itself, which this file cannot see. The flow believes
the CPU only where little else is likely: the name is imported from no known library (those that place what
they load, Whisper's or CLIP's ``load``, or that are no module at all), it is not named like a helper that may
place what it builds (``build_model(cfg)``, ``get_backbone()``, ``load_model(path)``), no argument speaks of a
device (``Net(device)``, ``Net(args.gpu)``), and the file itself treats the bound name as a module with weights
(``net.parameters()``, ``net.state_dict()``). A model without weights (an augmentation) mixes with any device.
One scan of the text first (the names its ``from`` imports bind, a read of weights: what the engine's selection
keeps), then the ``ast`` of the whole file, once, where the flow meets such a call.
"""

from __future__ import annotations

import ast
import re
import sys

from .._lazy import cst
from ..words import names_imported_from
from .code import code_of

# Packages that are no project's own: libraries that place what they build or load, and others.
_LIBRARIES = frozenset({
    "torch", "torchvision", "torchaudio", "torchtext", "transformers", "diffusers", "sentence_transformers",
    "whisper", "clip", "open_clip", "ultralytics", "yolov5", "detectron2", "mmdet", "mmcv", "mmseg", "mmengine",
    "mmpose", "mmocr", "fairseq", "accelerate", "lightning", "pytorch_lightning", "timm", "peft", "vllm",
    "deepspeed", "apex", "kornia", "facenet_pytorch", "segment_anything", "lavis", "fastai", "allennlp",
    "flair", "spacy", "stanza", "gym", "gymnasium", "stable_baselines3", "ray", "dgl", "torch_geometric",
    "numpy", "sklearn", "pandas", "scipy", "PIL", "cv2", "tensorflow", "keras", "jax", "flax", "onnxruntime",
})
# Helpers that may place what they build, load or wrap.
_HELPER_VERBS = re.compile(
    r"^(build|get|load|create|make|init|setup|set|prepare|restore|from|to|wrap|instantiate|fetch|auto|resume|"
    r"convert|parallel|distribute|place|move|select|choose)", re.I)
_PLACING_WORDS = re.compile(r"device|cuda|gpu|rank|map_location|accelerator", re.I)
_WEIGHT_METHODS = frozenset({"parameters", "named_parameters", "state_dict", "load_state_dict"})


def project_model(names, call: "cst.Call", target: str, source: str) -> bool:
    """Does ``target = call`` bind a CPU module of the project's own (see the module's docstring)?"""
    func = call.func
    if not isinstance(func, cst.Name) or func.value not in project_constructor_words(source):
        return False
    imports, weighted = _read(names.module_body)
    if target not in weighted or func.value not in imports:
        return False
    return not any(arg.star or _PLACING_WORDS.search(code_of(arg)) for arg in call.args)


def project_constructor_words(source: str) -> frozenset:
    """The names a ``from ... import`` of ``source`` binds that ``project_model`` may accept as constructors: those
    the text calls to bind a name it reads as a module with weights (``net = vgg16_bn(``, then ``net.parameters(``).
    A superset of what the ``ast`` says, from scans of the text: what the engine's selection keeps, and the flow's
    first test before it reads the ``ast``."""
    if _WORDS[0] is not source and _WORDS[0] != source:  # the engine, its selection and the flow ask in turn
        found = frozenset()
        weighted = {match.group(1) for match in (_RECEIVER.search(source, max(0, read.start() - 300), read.start())
                                                 for read in _WEIGHT_READ.finditer(source)) if match}
        if weighted:
            built = {match.group(1) for name in weighted for match in _bound_call(name).finditer(source)}
            if built:
                imported = names_imported_from(source)
                found = frozenset(name for name in built & imported if not _HELPER_VERBS.match(name))
        _WORDS[:] = [source, found]
    return _WORDS[1]


def may_build_project_models(present: frozenset) -> bool:
    """Can the file's words hold a project model at all (a test of its identifiers before it is read)?"""
    return "import" in present and not _WEIGHT_METHODS.isdisjoint(present)


_WORDS: list = [None, frozenset()]  # the last source read, and its constructor words
# Between two tokens: spaces and line breaks, a backslash continuation, a comment (``net \\`` newline ``.parameters(``).
_GAP = r"(?:\s|\\\n|#[^\n]*\n)*"  # a comment runs to its line's end: one way to read each gap, no backtracking
_DOTTED = rf"[A-Za-z_]\w*(?:{_GAP}\.{_GAP}[A-Za-z_]\w*)*"
# ``net.parameters(``: a read of weights (the method's name found first: a fast scan), then the receiver and its dot
# just before it (a short look back).
_WEIGHT_READ = re.compile(rf"(?:{'|'.join(sorted(_WEIGHT_METHODS, key=len, reverse=True))}){_GAP}\(")
_RECEIVER = re.compile(rf"\b([A-Za-z_]\w*){_GAP}\.{_GAP}\Z")
# What a name is bound to: ``vgg16_bn(``, ``nn.DataParallel(Net(`` (the callee captured).
_CALLED = rf"{_GAP}\(?{_GAP}(?:{_DOTTED}{_GAP}\({_GAP})?([A-Za-z_]\w*){_GAP}\("


def _bound_call(name: str) -> "re.Pattern":
    """``net = vgg16_bn(``, ``net = nn.DataParallel(Net(``: ``name`` bound to a call, or to a call's first argument."""
    return re.compile(rf"\b{re.escape(name)}[ \t]*=(?!=){_CALLED}")


_LAST: list = [None, None]  # the last module body read, and what was read: the flow asks at each assignment


def _own_module(module: str) -> bool:
    """Can ``module`` be the project's own: no known library, nor Python's (``typing.cast``, ``copy.deepcopy``
    hand back what they are given; post-hoc, from a held-out script's ``model = cast(nn.Module,
    torch.compile(model))``)?"""
    top = module.split(".")[0]
    return top not in _LIBRARIES and top not in sys.stdlib_module_names


def _read(body: list) -> tuple:
    """(constructors, weighted names) of a module's ``ast`` body: each name of a ``from module import name`` whose
    module is no known library, not named like a helper and not defined or rebound by the file itself; and each
    name the file reads as a module with weights (``net.parameters()``, ``net.load_state_dict(...)``)."""
    if _LAST[0] is body:
        return _LAST[1]
    imported: set = set()
    defined: set = set()
    weighted: set = set()
    for statement in body:
        for node in ast.walk(statement):
            if isinstance(node, ast.ImportFrom) and (node.level or _own_module(node.module or "")):
                imported.update(alias.asname or alias.name for alias in node.names if alias.name != "*")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in _WEIGHT_METHODS and isinstance(node.func.value, ast.Name):
                weighted.add(node.func.value.id)
    constructors = frozenset(name for name in imported - defined if not _HELPER_VERBS.match(name))
    found = (constructors, frozenset(weighted))
    _LAST[:] = [body, found]
    return found
