"""Device flow: per function (or module top level), where the code proves a value lives.

One analysis shared by TDV601-TDV603. It walks a function body (or the
module's top-level statements) in source order, keeping per name what the
code itself proves:

- ``CPU``: a tensor factory without ``device=``, ``torch.from_numpy``,
  ``.cpu()``, ``.to("cpu")``, ``torch.load(..., map_location="cpu")``, ops on
  CPU values;
- ``PLACED``: ``.to(<device>)``, ``.cuda()``, a factory with a non-CPU
  ``device=``, the output of a placed module, ops on placed values;
- ``MOVED``: a module moved in place (``model.to(device)`` as a statement), or
  a parameter used as a module (``model.train()``) once called with a placed
  tensor: only calling it says anything;
- ``SIBLING``: an element of a loader loop (``for x, y in loader``,
  ``batch["y"]``) not moved yet;
- anything else is unknown and never reported. Re-binding, branches that
  disagree, loops and ``del`` make a name unknown unless every path agrees (a
  value placed on one path is placed; after ``if use_gpu:`` without ``else`` the
  body's value wins, but not after ``if n_gpu > 1:``, which one GPU skips).

It records where values of two kinds meet in an operation that needs one
device (``Flow.meets``), where a loader element that stayed behind meets a
placed value while a sibling was moved (``Flow.siblings``), and where a
placed tensor is turned into NumPy (``Flow.numpys``). Code under
``pytest.raises`` / ``assertRaises`` and CPU-only branches is walked (for the
bindings) but records nothing.

The package, by part: ``values`` (what is known of a value), ``words`` (the
vocabulary), ``statements`` / ``expressions`` / ``calls`` / ``loops`` (the walk), ``places``
(moves, ``device=`` and ``map_location``), ``layers`` (layers a function builds),
``facts`` (what a file's module code and ``__init__`` methods prove, for the
functions that read them), ``analysis`` (one scope's walk and its meetings),
``reports`` (the rules' side).
"""

from .analysis import flow_of
from .reports import FlowReports
from .values import Flow, Meet, Value
from .words import LOADER_WORDS

__all__ = ["LOADER_WORDS", "Flow", "FlowReports", "Meet", "Value", "flow_of"]
