"""Expressions: names, attributes, operators, subscripts and comprehensions."""

from __future__ import annotations

import re
from typing import Optional

from ..._lazy import cst
from ..code import code_of, string_value
from ..guards import is_cuda_flag
from .arrays import converts_stored
from .facts import key_of
from .statements import cpu_only_test, cuda_test
from .layers import is_cpu_layer
from .values import (
    ANY_KEY, BATCH, BOUND, CPU, DEVICE, FRAMEWORK, LIST, MOVED, NUMPY, OBJECT, Meet, PLACED, SIBLING, TUPLE, Value,
    combined, either,
)
from .words import DEVICE_TYPES, META_ATTRS, TENSOR_MEMBERS


class Expressions:
    """Mixin of the flow walk (``analysis._Analysis``)."""

    def bind(self, target, value: Optional[Value], env: dict) -> None:
        key = key_of(target)
        if key is not None:
            if isinstance(target, cst.Attribute):
                self.ev(target.value, env)
                self.attributes_bound.add(key)  # ``self.x``: bound from here on, whatever it holds
            if value is None or value.kind == TUPLE:
                env[key] = BOUND
            elif value.kind in (CPU, PLACED):
                env[key] = value.derived(label=key)  # messages name the variable
            else:
                env[key] = value
        elif isinstance(target, (cst.Tuple, cst.List)) and _fits(value, target):
            for element, part in zip(target.elements, value.parts):  # ``grid, mask = make_grid(...)``
                self.bind(element.value, part, env)
        elif isinstance(target, (cst.Tuple, cst.List)):
            # A framework's batch: its elements are where it put the whole. So are a placed value's
            # (``score, ratio = model(x)``, ``_, top = torch.max(out, 1)``), unless only guessed placed.
            spread = value is not None and (
                value.kind == FRAMEWORK or value.spread or value.kind == PLACED and not value.guessed
            )
            if spread and value.outputs:  # a module's answers: each maybe no tensor (a CRF's decoded lists)
                value = value.derived()
                value.unpacked = True
            for element in target.elements:
                self.bind(element.value, value if spread else None, env)
        elif isinstance(target, cst.StarredElement):
            self.bind(target.value, None, env)
        elif isinstance(target, cst.Attribute) and target.attr.value == "data" and key_of(target.value):
            self.bind(target.value, value, env)  # x.data = v: x now holds v's storage, on v's device
        else:
            if isinstance(target, cst.Subscript):
                self.store_element(target, value, env)
            elif isinstance(target, cst.Attribute) and value is not None and value.scatters:
                self.scatters_through(target.value, env)
            elif isinstance(target, cst.Attribute) and value is not None and value.kind in (PLACED, MOVED):
                self.forget_filled_layer(target, env)
            self.ev(target, env)  # a[i] = v / self.x = v: evaluate the parts

    def forget_filled_layer(self, target, env: dict) -> None:
        """``linear.weight.data = W``, ``linear.bias = b``: a layer built on the CPU whose own weight or bias
        is given a placed tensor is no longer known to be on the CPU (post-hoc, from v126's first read: a
        notebook that replaces a fresh ``nn.Linear``'s weight and bias with CUDA tensors before calling it).
        A placed submodule set on a model (``net.head = head.cuda()``) leaves the rest where it is."""
        if isinstance(target, cst.Attribute) and target.attr.value == "data":
            target = target.value
        if isinstance(target, cst.Attribute) and target.attr.value in ("weight", "bias"):
            key = key_of(target.value)
            if key is not None and is_cpu_layer(env.get(key)):
                env.pop(key)

    def note_return(self, expr, env: dict) -> None:
        """``return x, y``: the tuple's value, and each part's (``flow/callers.tuple_result``)."""
        parts = None
        if isinstance(expr, cst.Tuple) and not any(isinstance(e, cst.StarredElement) for e in expr.elements):
            parts = [self.ev(element.value, env) for element in expr.elements]
            value = _collected_list(expr, parts)
        else:
            value = self.ev(expr, env) if expr is not None else None
        self.flow.returns.append(value)
        self.flow.return_parts.append(parts)

    def scatters_through(self, owner, env: dict) -> None:
        """``model.features = nn.DataParallel(model.features)`` (torchvision's VGG and AlexNet in the
        ImageNet example): the forward hands its input to that wrapper first, which scatters it, so
        the model takes a CPU input as a wrapped one does."""
        key = key_of(owner)
        if key is None:
            return
        known = env.get(key)
        wrapper = known.derived() if known is not None and known.kind in (PLACED, MOVED) else Value(OBJECT, owner)
        wrapper.scatters = True
        env[key] = wrapper

    def store_element(self, target: "cst.Subscript", value: Optional[Value], env: dict) -> None:
        """``x[k] = v``, the one reading of a store into an element. Into a loader's batch
        (``batch["x"] = ...``; a computed key, all of them) it rebinds that element: from here on it holds
        what was stored, not the CPU tensor the loader gave. Into a NumPy array (``g_loss[i] = loss``), a
        placed tensor stored into more than one element of it is converted with ``np.asarray``
        (flow/arrays.py)."""
        key = key_of(target.value)
        held = env.get(key) if key is not None else None
        if held is None or held is BOUND:
            return
        if held.kind == BATCH:
            stored = value if value is not None and value.kind in (CPU, PLACED, SIBLING) else None  # ``.float()``
            held.loop.stored[_element_key(target) if _keyed(target) else ANY_KEY] = stored
        elif held.kind == NUMPY and isinstance(target.value, cst.Name) and value is not None \
                and value.kind == PLACED and not value.guessed and held.rank and converts_stored(target, held.rank):
            self.record_numpy(target, value)

    def ev(self, expr, env: dict) -> Optional[Value]:
        if isinstance(expr, cst.Name):
            value = env.get(expr.value)
            return None if value is BOUND else value
        if isinstance(expr, (cst.SimpleString, cst.ConcatenatedString)):
            text = string_value(expr) or ""
            if text.partition(":")[0] in DEVICE_TYPES:
                return Value(DEVICE, repr(text), zero=text.startswith("cpu"))
            return None
        if isinstance(expr, cst.Call):
            return self.call(expr, env)
        if isinstance(expr, cst.Attribute):
            key = key_of(expr)
            if key is not None and key in env:
                value = env[key]
                return None if value is BOUND else value
            base = self.ev(expr.value, env)
            return self.attribute(expr, base)
        if isinstance(expr, cst.BinaryOperation):
            left, right = _operand(expr.left, self.ev(expr.left, env)), _operand(expr.right, self.ev(expr.right, env))
            self.meet(expr, left, right)
            return combined(left, right) or _with_number(expr, left, right)
        if isinstance(expr, cst.Comparison):
            left = _operand(expr.left, self.ev(expr.left, env))
            result = None
            for comparison in expr.comparisons:
                right = _operand(comparison.comparator, self.ev(comparison.comparator, env))
                if isinstance(comparison.operator, (cst.In, cst.NotIn, cst.Is, cst.IsNot)):
                    result = None
                else:
                    self.meet(expr, left, right)
                    result = combined(left, right)
                left = right
            return result
        if isinstance(expr, cst.Subscript):
            return self.subscript(expr, env)
        if isinstance(expr, cst.UnaryOperation):
            inner = self.ev(expr.expression, env)
            return None if isinstance(expr.operator, cst.Not) else inner
        if isinstance(expr, cst.IfExp):
            return self.conditional(expr, env)
        if isinstance(expr, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            elements = self.comprehension(expr, env)
            return _collected_list(expr, elements) if isinstance(expr, (cst.ListComp, cst.GeneratorExp)) else None
        if isinstance(expr, cst.NamedExpr):
            value = self.ev(expr.value, env)
            self.bind(expr.target, value, env)
            return value
        if isinstance(expr, cst.Lambda):
            return None
        if isinstance(expr, cst.List) and not expr.elements:
            collected = Value(LIST, expr)  # ``distances = []``: followed while only placed values are appended
            collected.items = []
            return collected
        values = [self.ev(child, env) for child in _expression_children(expr)]
        # A tuple too: ``(h0, c0)``, an LSTM's state, is two tensors the model meets.
        return _collected_list(expr, values) if isinstance(expr, (cst.List, cst.Tuple)) else None

    def conditional(self, expr: cst.IfExp, env: dict) -> Optional[Value]:
        """``a if test else b``. Under a test for CUDA or the code's GPU switch a GPU machine takes
        one side, as it takes one branch of such an ``if`` (``statements.if_``): ``images[i] if not
        use_gpu else images[i].cpu()`` is on the CPU wherever it runs."""
        self.ev(expr.test, env)
        cpu_body = cpu_only_test(expr.test, self.names)
        cpu_else = not cpu_body and (cuda_test(expr.test) or is_cuda_flag(expr.test))
        self.mute += cpu_body
        body = self.ev(expr.body, env)
        self.mute -= cpu_body
        self.mute += cpu_else
        orelse = self.ev(expr.orelse, env)
        self.mute -= cpu_else
        if cpu_body:
            return orelse
        return body if cpu_else else either(body, orelse)

    def attribute(self, expr: cst.Attribute, base: Optional[Value]) -> Optional[Value]:
        attr = expr.attr.value
        if base is None:
            return None
        if base.kind == BATCH:
            return self.element(base, code_of(expr))
        if attr == "device" and base.kind in (CPU, PLACED):
            return Value(DEVICE, expr, zero=base.kind == CPU)
        if base.kind == SIBLING:
            if attr in TENSOR_MEMBERS:
                base.evidence = True
            return None
        if attr in META_ATTRS or base.kind not in (CPU, PLACED):
            return None
        if base.kind == CPU and base.factory is False and base.label.startswith("torch.load"):
            return None  # checkpoint["epoch"]: may be anything
        return base

    def subscript(self, expr: cst.Subscript, env: dict) -> Optional[Value]:
        base = self.ev(expr.value, env)
        if _old_scalar(expr):
            return None  # ``loss.data[0]``: torch 0.3's Python number (an error on a 0-dim tensor since)
        for element in expr.slice:
            if isinstance(element.slice, cst.Index):
                self.index_with(expr, base, self.ev(element.slice.value, env))
            else:
                for part in (element.slice.lower, element.slice.upper, element.slice.step):
                    if part is not None:
                        self.ev(part, env)
        if base is None:
            return None
        if base.kind == TUPLE:  # ``image = load_pair(path)[0]``: the part at that position, as an unpacking reads it
            index = expr.slice[0].slice if len(expr.slice) == 1 else None
            number = index.value if isinstance(index, cst.Index) else None
            if isinstance(number, cst.Integer) and base.parts and int(number.value) < len(base.parts):
                return base.parts[int(number.value)]
            return None
        if base.kind == BATCH:
            stored = base.loop.stored  # empty unless a store rebound an element: then compare keys
            if ANY_KEY in stored:
                return None
            key = _element_key(expr) if stored else None
            return stored[key] if key in stored else self.element(base, code_of(expr))
        if base.kind == SIBLING:
            base.evidence = True  # indexed: a tensor or a sequence; see evidence in use
            return None
        if base.kind in (PLACED, FRAMEWORK):
            return base  # a framework's batch: ``X[0]`` is where the framework put it
        if base.kind == LIST and base.items and all(item.kind == PLACED for item in base.items):
            return base.items[0]  # ``data = [x.to(device) for x in batch]``; ``data[0]``
        if base.kind == CPU and not base.label.startswith("torch.load"):
            # counts[j]: maybe one element; image[None], x[:, 1:]: as many dimensions or more;
            # inputs["input_ids"]: a mapping's tensor, whole
            return base.derived() if _keeps_dims(expr) or _keyed(expr) else base.derived(zero=True)
        return None

    def index_with(self, expr, base: Optional[Value], index: Optional[Value]) -> None:
        """``cpu_values[placed_indices]``: torch takes indices on the CPU or on
        the indexed tensor's device, so only this way round fails."""
        if base is None or index is None or self.mute:
            return
        if base.kind == CPU and not base.zero and index.kind == PLACED and not index.opaque:
            self.flow.meets.append(Meet(expr, base, index, self.index))

    def comprehension(self, expr, env: dict) -> list:
        """Follow a comprehension in its own scope; the values of what it yields (each part of a
        tuple: ``[(x.to(d), y.to(d)) for x, y in batches]``), none for a dict comprehension."""
        local = dict(env)
        clause = expr.for_in
        while clause is not None:
            self.ev(clause.iter, local)
            self.bind(clause.target, None, local)
            for condition in clause.ifs:
                self.ev(condition.test, local)
            clause = clause.inner_for_in
        if isinstance(expr, cst.DictComp):
            self.ev(expr.key, local)
            self.ev(expr.value, local)
            return []
        if isinstance(expr.elt, cst.Tuple):
            return [self.ev(part.value, local) for part in expr.elt.elements]
        return [self.ev(expr.elt, local)]


def _fits(value: Optional[Value], target) -> bool:
    """Does ``target`` (``a, b``, no starred name) unpack ``value``'s parts one by one?"""
    elements = target.elements
    return value is not None and value.parts is not None and len(value.parts) == len(elements) \
        and not any(isinstance(element, cst.StarredElement) for element in elements)


def _collected_list(expr, items: list) -> Optional[Value]:
    """A list display or comprehension of placed tensors (or of tuples of them), or of CPU ones: a
    LIST whose items are those tensors, so that NumPy of it is NumPy of them and ``torch.stack`` of it
    lives where they do; anything else stays unknown."""
    kinds = {item.kind if item is not None else None for item in items}
    if not items or kinds not in ({PLACED}, {CPU}):
        return None
    collected = Value(LIST, expr)
    collected.items = items
    return collected


def _expression_children(expr) -> list:
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        return [e.value for e in expr.elements]
    if isinstance(expr, cst.Dict):
        out = []
        for element in expr.elements:
            if isinstance(element, cst.DictElement):
                out.append(element.key)
            out.append(element.value)
        return out
    if isinstance(expr, cst.BooleanOperation):
        return [expr.left, expr.right]
    if isinstance(expr, cst.Await):
        return [expr.expression]
    if isinstance(expr, (cst.Yield, cst.StarredElement)):
        return [expr.value] if isinstance(expr.value, cst.BaseExpression) else []
    if isinstance(expr, cst.FormattedString):
        return [p.expression for p in expr.parts if isinstance(p, cst.FormattedStringExpression)]
    return []


def _old_scalar(expr: "cst.Subscript") -> bool:
    """``x.data[0]``: how torch before 0.4 read a loss's value (``.item()`` since)."""
    value = expr.value
    return isinstance(value, cst.Attribute) and value.attr.value == "data" and len(expr.slice) == 1 \
        and isinstance(expr.slice[0].slice, cst.Index) and isinstance(expr.slice[0].slice.value, cst.Integer) \
        and expr.slice[0].slice.value.value == "0"


def _element_key(expr: "cst.Subscript") -> str:
    """``batch["x"]`` and ``batch['x']`` alike: the base's code and the key's value."""
    if _keyed(expr):
        return f"{code_of(expr.value)}[{string_value(expr.slice[0].slice.value)!r}]"
    return code_of(expr)


def _keyed(expr: "cst.Subscript") -> bool:
    """``inputs["input_ids"]``: a string key, so the base is a mapping (no tensor takes one)."""
    return len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index) \
        and string_value(expr.slice[0].slice.value) is not None


def _keeps_dims(expr: "cst.Subscript") -> bool:
    """``x[None]``, ``x[:, None]``, ``x[..., 1:]``: slices, ``None`` and ``...`` drop no dimension."""
    return all(
        isinstance(element.slice, cst.Slice)
        or isinstance(element.slice.value, cst.Ellipsis)
        or isinstance(element.slice.value, cst.Name) and element.slice.value.value == "None"
        for element in expr.slice
    )


def _with_number(expr: cst.BinaryOperation, left: Optional[Value], right: Optional[Value]) -> Optional[Value]:
    """``image * 2.0 - 1.0``: a CPU tensor and a number literal give a CPU tensor of the same shape."""
    for value, other in ((left, expr.right), (right, expr.left)):
        if value is not None and value.kind == CPU and _is_number(other):
            return value.derived(zero=value.zero)
    return None


def _is_number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float, cst.Imaginary))


_WEIGHT_NAME = re.compile(r"(weight|bias)(_|$)")


def _operand(node, value: Optional[Value]) -> Optional[Value]:
    """What an operand of arithmetic or a comparison is known to be. An attribute of a CPU layer read as a
    tensor (``likelihood - model.kl_divergence``) may be no weight the layer was built with but what its forward
    made, wherever its input was; its ``weight`` and ``bias`` are weights (``layer.weight + y``)."""
    if isinstance(node, cst.Attribute) and is_cpu_layer(value) and not _WEIGHT_NAME.match(node.attr.value):
        return None
    return value
