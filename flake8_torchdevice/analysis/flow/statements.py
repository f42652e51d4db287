"""Statements: bindings, branches, loops, ``try`` and ``with``, in source order."""

from __future__ import annotations

import ast
from typing import Optional

from ..._lazy import cst
from ..code import (chained_move, code_of, is_main_guard, module_chain_root, paired_assignment, param_names,
                    string_value, subtree, target_names)
from ..guards import _expects_failure, ends_block, is_cuda_flag, is_cuda_test, is_no_cuda_test
from .facts import SELF, declared_global, imported_names, key_of
from .flags import flag_paths, note_flag, unplace
from .layers import cpu_layer, is_cpu_layer
from .values import BOUND, CPU, DEVICE, INPUT, MOVED, OBJECT, PLACED, Value, combined, merge


class Statements:
    """Mixin of the flow walk (``analysis._Analysis``)."""

    def block(self, statements, env: dict) -> None:
        for statement in statements:
            self.statement(statement, env)

    def statement(self, node, env: dict) -> None:
        if isinstance(node, cst.SimpleStatementLine):
            for small in node.body:
                self.small(small, env)
        elif isinstance(node, cst.If):
            self.if_(node, env)
        elif isinstance(node, (cst.For, cst.While)):
            self.loop(node, env)
        elif isinstance(node, cst.With):
            muted = any(_expects_failure(item) for item in node.items)
            default = self.default_device
            for item in node.items:
                value = self.ev(item.item, env)
                if value is not None and value.kind == DEVICE and not value.zero:
                    self.default_device = True  # ``with torch.device("cuda"):`` builds there
                if item.asname is not None:
                    self.bind(item.asname.name, None, env)
            self.mute += muted
            self.block(body_of(node.body), env)
            self.mute -= muted
            self.default_device = default
        elif isinstance(node, cst.Try):
            before = dict(env)
            self.block(body_of(node.body), env)
            ends = [env.copy()]
            for handler in node.handlers:
                local = merge(before, env)
                self.block(body_of(handler.body), local)
                ends.append(local)
            if node.orelse is not None:
                self.block(body_of(node.orelse.body), ends[0])
            merged = ends[0]
            for other in ends[1:]:
                merged = merge(merged, other)
            env.clear()
            env.update(merged)
            if node.finalbody is not None:
                self.block(body_of(node.finalbody.body), env)
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            env.pop(node.name.value, None)
        else:
            env.clear()  # match, async constructs: forget what was known
            self.flow.returns.append(None)  # and what they may return
            self.flow.return_parts.append(None)

    def small(self, node, env: dict) -> None:
        if isinstance(node, cst.Assign):
            pairs = paired_assignment(node)
            if pairs is not None:  # a, b = a.cuda(), b.cuda(): each name its own value
                self.note_loader(node, env)  # total, bar = 0, tqdm(loader)
                values = [self.ev(value, env) for _, value in pairs]
                for (target, _), value in zip(pairs, values):
                    self.bind(target, value, env)
                return
            if self.first_batch(node, env):
                return
            self.note_loader(node, env)
            if isinstance(node.value, cst.Name) and is_cpu_layer(env.get(node.value.value)):
                env.pop(node.value.value)  # ``self.model = model``: moving either name moves both
                for target in node.targets:
                    self.bind(target.target, None, env)
                return
            before = env.get(node.targets[0].target.value) if isinstance(node.targets[0].target, cst.Name) else None
            value = self.ev(node.value, env)
            if value is None and self.project_model(node, env):
                value = cpu_layer(node.value)
            elif value is not None and value.kind == OBJECT and value.scatters and self.project_model(node, env, True):
                value = cpu_layer(node.value)  # ``model = nn.DataParallel(Net())``: the wrapper holds it where it is
                value.scatters = True
            elif is_cpu_layer(before) and value is not None and value.scatters and _wraps(node):
                value = before.derived()  # ``model = nn.DataParallel(model)``: no other name holds the CPU module
                value.scatters = True
            for target in node.targets:
                self.bind(target.target, value, env)
        elif isinstance(node, cst.AnnAssign):
            value = self.ev(node.value, env) if node.value is not None else None
            self.bind(node.target, value, env)
        elif isinstance(node, cst.AugAssign):
            target = self.ev(node.target, env)
            value = self.ev(node.value, env)
            self.meet(node, target, value, into=True)
            self.bind(node.target, combined(target, value), env)
        elif isinstance(node, cst.Expr):
            self.expression_statement(node.value, env)
        elif isinstance(node, cst.Del):
            for name in target_names(node.target):
                env.pop(name, None)
        elif isinstance(node, cst.Return):
            self.note_return(node.value, env)
        elif isinstance(node, cst.Assert):
            self.ev(node.test, env)
        elif isinstance(node, (cst.Global, cst.Nonlocal)):
            for name in node.names:
                env.pop(name.name.value, None)
        elif isinstance(node, (cst.Import, cst.ImportFrom)):
            for name in imported_names(node):
                env.pop(name, None)

    def expression_statement(self, expr, env: dict) -> None:
        """``model.to(device)`` / ``model.cuda()`` alone moves a module in place, also under methods that return
        it (``model.to(device).eval()``, ``model.eval().cuda()``); a layer built here and moved somewhere unknown
        (``model.to(d)``, ``model.to_empty(device=d)``) is unknown, and so is a placed module moved back with
        ``model.cpu()`` / ``model.to("cpu")`` (``model.cpu().eval()``)."""
        move = chained_move(expr)
        name = key_of(module_chain_root(move.func.value)) if move is not None else None
        method = move.func.attr.value if name is not None else None
        if method in ("to", "cuda", "to_empty") and is_cpu_layer(env.get(name)):
            result = self.ev(move, env)
            where = None if result is None or method == "to_empty" else result.kind
            if where == PLACED:
                env[name] = Value(MOVED, name)
            elif where != CPU:
                env.pop(name, None)  # moved somewhere unknown
        elif method in ("to", "cuda", "cpu"):
            before = None if env.get(name) is BOUND else env.get(name)
            result = self.ev(move, env)
            if before is None or before.kind in (OBJECT, INPUT, PLACED, MOVED):
                if result is not None and result.kind == PLACED:
                    env[name] = Value(MOVED, name, local=bool(before and before.local),
                                      param=bool(before and before.param))
                    env[name].scatters = bool(before and before.scatters)  # a wrapper moved in place still scatters
                elif result is not None and result.kind == CPU and before is not None:
                    env.pop(name, None)  # back on the CPU (a local bound to something unknown stays so)
        else:
            self.ev(expr, env)

    def if_(self, node: cst.If, env: dict) -> None:
        self.ev(node.test, env)
        if self.index is not None and node.orelse is None and is_main_guard(node.test):
            self.block(body_of(node.body), env)  # the script's run: what it binds, the functions see
            return
        # In ``__init__``: the attributes bound before this ``if`` (those bound on one path only
        # exist only there, see ``_keep_attributes_of_one_path``).
        defaults = self.class_defaults()
        bound = None if defaults is None else defaults | self.attributes_bound
        cpu_only = cpu_only_test(node.test, self.names)
        flagged = flag_paths(self, node.test)  # ``__init__`` placed attributes under the same test
        body_env = dict(env)
        if flagged:
            unplace(body_env, flagged[0], self.facts)
        self.mute += cpu_only
        self.block(body_of(node.body), body_env)
        self.mute -= cpu_only
        else_env = dict(env)
        if flagged:
            unplace(else_env, flagged[1], self.facts)
        if node.orelse is not None:
            # ``torch.cuda.is_available()``, or the code's own switch: the else is the CPU run
            cuda_only_else = cuda_test(node.test) or is_cuda_flag(node.test)
            self.mute += cuda_only_else
            if isinstance(node.orelse, cst.If):
                self.if_(node.orelse, else_env)
            else:
                self.block(body_of(node.orelse.body), else_env)
            self.mute -= cuda_only_else
        elif is_cuda_test(node.test) and not is_no_cuda_test(node.test, self.names) and not _several_gpus(node.test) \
                and not _leaves(node.body):  # a GPU path that returns is not what follows the ``if``
            _gpu_path_wins(env, body_env, else_env)
        merged = _after(node, body_env, else_env)
        merged.update(self.first_bound(node, body_env, else_env, env, merged))
        if bound is not None:
            _keep_attributes_of_one_path(bound, body_env, else_env, merged)
        note_flag(self, node.test, body_env, else_env, merged)
        env.clear()
        env.update(merged)

    def first_bound(self, node: cst.If, body_env: dict, else_env: dict, before: dict, merged: dict) -> dict:
        """The names this ``if`` binds first, on one path only: the other path never mentions them, nor does the scope
        before the ``if`` (a parameter included) nor any ``global`` statement, so there they are unbound and a later
        read raises ``NameError``. What follows holds the binding path's value (``if args.net == "vgg": net = vgg()``
        ... ``else: print("unsupported")``)."""
        found: dict = {}
        declared = None  # read from the text once, where a name needs it
        for env, other in ((body_env, node.orelse), (else_env, node.body)):
            for name in [name for name, value in env.items() if value.kind in (CPU, PLACED, MOVED)
                         and name not in merged and name not in before and "." not in name]:
                if declared is None:
                    declared = declared_global(self.context.source)
                if not (name in declared or _mentions(other, name) or _mentions_before(self._node, node, name)):
                    found[name] = env[name]
        return found

    def class_defaults(self) -> Optional[set]:
        """In ``__init__``: ``_class_attributes`` of its class, read once per walk; else None."""
        if self.scope != "__init__" or self.cls is None:
            return None
        if self._class_defaults is UNREAD:
            self._class_defaults = _class_attributes(self.names, self.cls)
        return self._class_defaults

    def loop(self, node, env: dict) -> None:
        """The body is walked once, from the state before the loop: exactly the
        first iteration, which runs whenever any does. After the loop, a name
        keeps its value only where the loop body left it unchanged."""
        before = dict(env)
        if isinstance(node, cst.For):
            self.ev(node.iter, env)
            self.bind(node.target, None, env)
            self.loader_elements(node, env)
        else:
            self.ev(node.test, env)
        self.block(body_of(node.body), env)
        merged = merge(before, env)
        if node.orelse is not None:
            self.block(body_of(node.orelse.body), merged)
        env.clear()
        env.update(merged)


def params_of(node: cst.FunctionDef) -> list:
    return [n for n in param_names(node.params) if n not in ("self", "cls")]


def _after(node: cst.If, body_env: dict, else_env: dict) -> dict:
    """What follows an ``if``: what both paths agree on, or the facts of the one path that goes on where the other
    leaves the function or the program (``else: raise ValueError(name)``, ``sys.exit()``, ``return``; not a loop's
    ``continue`` or ``break``, whose facts the code after the loop may read)."""
    body_leaves, else_leaves = _leaves(node.body), node.orelse is not None and _chain_leaves(node.orelse)
    if body_leaves != else_leaves:
        return dict(else_env if body_leaves else body_env)
    return merge(body_env, else_env)


def _chain_leaves(orelse) -> bool:
    if isinstance(orelse, cst.If):
        return _leaves(orelse.body) and orelse.orelse is not None and _chain_leaves(orelse.orelse)
    return _leaves(orelse.body)


def _leaves(body) -> bool:
    final = body.body[-1] if body.body else None
    if isinstance(final, cst.SimpleStatementLine):
        final = final.body[-1] if final.body else None
    return not isinstance(final, (cst.Continue, cst.Break)) and ends_block(body)


def _mentions(node, name: str) -> bool:
    """Does ``name`` occur as a variable anywhere in ``node`` (None: an ``if`` without ``else``)?"""
    pending = [node] if node is not None else []
    while pending:
        current = pending.pop()
        if isinstance(current, cst.Name) and current.value == name:
            return True
        pending.extend(_parts(current))
    return False


def _parts(node) -> list:
    """The children of ``node`` that may name a variable: not an attribute's name (``args.net``) nor a keyword's."""
    if isinstance(node, (cst.Attribute, cst.Arg)):
        return [node.value]
    return list(node.children)


def _mentions_before(scope, stop, name: str) -> bool:
    """Does ``name`` occur in ``scope`` (a function, its parameters included, or the module) before ``stop``, in the
    order of the source? Not in the bodies of nested definitions, which are other scopes (their names count)."""
    pending = [scope]
    while pending:
        current = pending.pop()
        if current is stop:
            return False
        if isinstance(current, cst.Name) and current.value == name:
            return True
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and current is not scope:
            if not isinstance(current, cst.Lambda) and current.name.value == name:
                return True
            continue
        if isinstance(current, cst.If) and _in_chain(current.orelse, stop):
            pending.extend([current.orelse, current.test])  # an ``elif`` of this chain: its earlier arms are exclusive
            continue
        pending.extend(reversed(_parts(current)))
    return False


def _in_chain(orelse, stop) -> bool:
    while isinstance(orelse, cst.If):
        if orelse is stop:
            return True
        orelse = orelse.orelse
    return False


def body_of(suite) -> list:
    return list(suite.body) if isinstance(suite, cst.IndentedBlock) else [cst.SimpleStatementLine(body=suite.body)]


def _gpu_path_wins(before: dict, body: dict, other: dict) -> None:
    """``if use_gpu: imgs = imgs.cpu()`` (no ``else``): on a GPU machine the body runs, so
    a placed value it rebinds is what follows the ``if``, not the placed one."""
    for name, value in before.items():
        if value.kind in (PLACED, MOVED) and body.get(name) is not value:
            if name in body:
                other[name] = body[name]
            else:
                other.pop(name, None)


UNREAD = object()  # ``_Analysis._class_defaults`` before ``class_defaults`` reads them


def _keep_attributes_of_one_path(bound: set, body: dict, other: dict, merged: dict) -> None:
    """``if self.model.recurrent: self.memories = torch.zeros(n, size)`` in ``__init__``, no other
    binding before it nor in the class body: on the other path the attribute does not exist (reading
    it raises ``AttributeError``), so wherever it is read it holds what this path bound."""
    for one, two in ((body, other), (other, body)):
        for key, value in one.items():
            if key.startswith(SELF) and key not in bound and key not in two and key not in merged \
                    and value is not BOUND and value.kind in (CPU, PLACED, MOVED):
                merged[key] = value


def _class_attributes(names, cls: "cst.ClassDef") -> Optional[set]:
    """``self.<name>`` for each name the class body binds (``memories = None``): a default the
    attribute falls back to where ``__init__`` does not bind it. Read from the file's ``ast`` (the
    engine may not parse a class body's plain assignments); None for a class defined elsewhere
    than at module level, or twice."""
    node = names.definition(cls.name.value)
    if not isinstance(node, ast.ClassDef):
        return None
    found = set()
    for statement in node.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else \
            [statement.target] if isinstance(statement, (ast.AnnAssign, ast.AugAssign)) else []
        found.update(SELF + n.id for target in targets for n in ast.walk(target) if isinstance(n, ast.Name))
    return found


def _several_gpus(test) -> bool:
    """``if n_gpu > 1:``, ``if torch.cuda.device_count() >= 2:``: a one-GPU machine skips the
    body, so it is not what follows the ``if`` there (both paths are)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    operator, bound = test.comparisons[0].operator, test.comparisons[0].comparator
    least = int(bound.value, 0) + isinstance(operator, cst.GreaterThan) if isinstance(bound, cst.Integer) else 0
    return isinstance(operator, (cst.GreaterThan, cst.GreaterThanEqual)) and least >= 2


def cpu_only_test(test, names) -> bool:
    """``device.type == "cpu"`` / ``not torch.cuda.is_available()``: the body runs on the CPU."""
    if is_no_cuda_test(test, names):
        return True
    for node in subtree(test):
        if isinstance(node, cst.Comparison) and all(
            isinstance(c.operator, (cst.Equal, cst.Is)) for c in node.comparisons
        ):
            operands = [node.left] + [c.comparator for c in node.comparisons]
            if any((string_value(o) or "").startswith("cpu") for o in operands):
                return True
    return False


def cuda_test(test) -> bool:
    """``torch.cuda.is_available()`` / ``device.type == "cuda"``: the else branch is CPU-only."""
    for node in subtree(test):
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return False
        if isinstance(node, cst.Comparison) and any(
            isinstance(c.operator, (cst.NotEqual, cst.IsNot)) for c in node.comparisons
        ):
            return False
    code = code_of(test)
    return "is_available" in code or "is_cuda" in code or '"cuda"' in code or "'cuda'" in code


def _wraps(node: "cst.Assign") -> bool:
    """``model = nn.DataParallel(model)``: one name, rebound to a call whose first argument it is."""
    target, value = node.targets[0].target, node.value
    return len(node.targets) == 1 and isinstance(target, cst.Name) and isinstance(value, cst.Call) and \
        bool(value.args) and isinstance(value.args[0].value, cst.Name) and value.args[0].value.value == target.value
