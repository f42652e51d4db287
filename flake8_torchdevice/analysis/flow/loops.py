"""Loader loops: ``for x, y in loader`` yields CPU elements, one of which may stay behind."""

from __future__ import annotations

from ..._lazy import cst
from ..code import code_of, last_name, paired_assignment, target_names
from .values import BATCH, FRAMEWORK, INPUT, PLACED, Loop, SIBLING, Value
from .words import LOADER_WORDS, WRAPPERS


class Loops:
    """Mixin of the flow walk (``analysis._Analysis``)."""

    def loader_elements(self, node: cst.For, env: dict) -> None:
        """``for x, y in loader`` / ``for i, (x, y) in enumerate(loader)`` /
        ``for batch in loader``: the elements, not moved yet."""
        iterable, enumerated = _unwrapped(node.iter)
        target = node.target
        if enumerated or isinstance(iterable, cst.Name) and iterable.value in self.enumerated:
            if not (isinstance(target, cst.Tuple) and len(target.elements) == 2):
                return
            target = target.elements[1].value
        if self.is_loader(iterable, env):
            self.bind_elements(target, env, self.unshown_loader(iterable, env))
        elif self.prepared_loader(iterable, env):
            # ``for X in accelerator.prepare(...)``'s loader: each batch is where the framework put it,
            # so is a copy of it (``torch.tensor(X[0], dtype=fp16)``; post-hoc, from v132's first read)
            for name in target_names(target):
                env[name] = Value(FRAMEWORK, name)

    def prepared_loader(self, iterable, env: dict) -> bool:
        """A loader a framework prepared (``accelerator.prepare``'s), or a name bound to a wrapper of one."""
        if not isinstance(iterable, cst.Name):
            return False
        known = env.get(iterable.value)
        return iterable.value in self.prepared or known is not None and known.kind == FRAMEWORK

    def first_batch(self, node: cst.Assign, env: dict) -> bool:
        """``x, y = next(iter(loader))``: one batch's elements, not moved yet."""
        value = node.value
        if len(node.targets) != 1 or not isinstance(node.targets[0].target, (cst.Name, cst.Tuple, cst.List)):
            return False
        if not (isinstance(value, cst.Call) and last_name(value.func) == "next"):
            return False
        inner = value.args[0].value if len(value.args) == 1 else None
        if not (isinstance(inner, cst.Call) and last_name(inner.func) == "iter" and len(inner.args) == 1):
            return False
        if not self.is_loader(inner.args[0].value, env):
            return False
        self.bind_elements(node.targets[0].target, env, self.unshown_loader(inner.args[0].value, env))
        return True

    def note_loader(self, node: cst.Assign, env: dict) -> None:
        """``val_generator = DataLoader(val_set)``, ``bar = tqdm(loader)``, also element by element
        (``total, bar = 0, tqdm(loader)``): the name is a loader however it is called; bound to
        anything else, it is not."""
        for name, value in _bound(node):
            value, enumerated = _unwrapped(value)
            is_loader = value is not None and self.is_loader(value, env)
            foreign = isinstance(value, cst.Name) and self.foreign_loader(value.value, env)
            (self.loaders.add if is_loader else self.loaders.discard)(name)
            (self.foreign.add if foreign else self.foreign.discard)(name)
            prepared = value is not None and not is_loader and self.prepared_loader(value, env)
            (self.prepared.add if prepared else self.prepared.discard)(name)
            # Unshown once any binding is (a parameter's alias too: ``dataloader = data``; a loader class
            # of the project's own, ``dataloader = DictDataLoader(...)``, as it is in the loop's header);
            # shown again only where rebound to a loader the file builds.
            if value is not None and (is_loader or isinstance(value, (cst.Name, cst.Call))) \
                    and self.unshown_loader(value, env):
                self.unshown.add(name)
            elif is_loader:
                self.unshown.discard(name)
            (self.enumerated.add if (is_loader or prepared) and enumerated else self.enumerated.discard)(name)

    def bind_elements(self, target, env: dict, unshown: bool = False) -> None:
        loop = Loop(unshown)
        if isinstance(target, cst.Name):
            env[target.value] = Value(BATCH, target.value, loop=loop)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                if isinstance(element.value, cst.Name):
                    label = element.value.value
                    env[label] = loop.elements[label] = Value(SIBLING, label, loop=loop)

    def is_loader(self, iterable, env: dict) -> bool:
        """A loader of CPU batches: not one a framework prepared, nor one built
        over placed tensors (``DataLoader(TensorDataset(x.to(device)))``)."""
        if isinstance(iterable, cst.Name):
            # A parameter named like the module's loader of placed tensors is that loader.
            for known in (self.ev(iterable, env), self.facts.get(iterable.value)):
                if known is not None and known.kind in (FRAMEWORK, PLACED):
                    return False
        if isinstance(iterable, cst.Name):
            if self.foreign_loader(iterable.value, env):
                return False
            return iterable.value in LOADER_WORDS or iterable.value in self.loaders
        if isinstance(iterable, cst.Attribute):
            return iterable.attr.value in LOADER_WORDS and not _framework_owner(iterable)
        if isinstance(iterable, cst.Call):
            return last_name(iterable.func) == "DataLoader"
        return False

    def unshown_loader(self, iterable, env: dict) -> bool:
        """A loader whose building the file does not show: a parameter (``def predict(model,
        dataloader, device)``; not one module code calls the function with a loader it builds), an
        attribute (``self.val_loader``), or a call of the project's own, a loader class or a function
        that builds one (``from dataset import DataLoader``, ``from data import get_loader``). Its
        dataset may hold tensors already placed (a ``Dataset`` that moves its data to the device when
        built), so only a moved element shows CPU batches. ``DataLoader(...)`` of torch, in this scope
        or module code, shows them."""
        if isinstance(iterable, cst.Name):
            known = env.get(iterable.value)
            param = known is not None and known.kind == INPUT and known.param and iterable.value not in self.shown
            return iterable.value in self.unshown or param
        if isinstance(iterable, cst.Attribute):
            return True
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name):
            name = iterable.func.value  # ``DataLoader(...)``, the name imported or defined here
            own = name in self.imported or name in self.names.local_class_names()
            return own and not (self.names.qualify(iterable.func) or "").startswith("torch.")
        return False

    def foreign_loader(self, name: str, env: dict) -> bool:
        """``from data import train_loader`` (or ``tqdm`` of it): another module built the loader,
        over tensors it may have placed; this file shows nothing of its batches."""
        return name in self.foreign or name not in env and name in self.imported

    def note_foreign_call(self, call: "cst.Call", env: dict) -> None:
        """Module code's ``train(EPOCHS, train_loader)`` with such a loader: for ``foreign_params``;
        with a loader it builds itself (``train_loop(train_dataloader, model)`` after
        ``train_dataloader = DataLoader(training_data)``): for ``shown_params``."""
        positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
        named = [(positional.index(arg) if arg.keyword is None else 0, arg) for arg in call.args
                 if not arg.star and isinstance(arg.value, cst.Name)]
        foreign = [(index, arg) for index, arg in named if self.foreign_loader(arg.value.value, env)]
        shown = [(index, arg) for index, arg in named if arg.value.value in self.loaders
                 and arg.value.value not in self.unshown and not self.foreign_loader(arg.value.value, env)]
        if foreign:
            self.flow.foreign_calls.append((call.func.value, foreign))
        if shown:
            self.flow.shown_calls.append((call.func.value, shown))

    def element(self, batch: Value, label: str) -> Value:
        loop = batch.loop
        if label not in loop.elements:
            loop.elements[label] = Value(SIBLING, label, loop=loop)
        return loop.elements[label]


def _bound(node: cst.Assign) -> list:
    """(name, the value bound to it) of each name an assignment binds: a plain name takes the
    value, ``a, b = x, y`` element by element; any other name a value unknown (None)."""
    pairs = paired_assignment(node)
    if pairs is not None:
        return [(target.value, value) for target, value in pairs if isinstance(target, cst.Name)]
    bound = []
    for target in node.targets:
        if isinstance(target.target, cst.Name):
            bound.append((target.target.value, node.value))
        else:
            bound += [(name, None) for name in target_names(target.target)]
    return bound


def _framework_owner(expr: cst.Attribute) -> bool:
    return "trainer" in code_of(expr.value).lower()


def _unwrapped(expr):
    """``tqdm(enumerate(loader), total=n)`` -> (``loader``, True): what the wrappers wrap, and
    whether one of them is ``enumerate`` (each item is then ``(i, batch)``)."""
    enumerated = False
    while isinstance(expr, cst.Call) and last_name(expr.func) in WRAPPERS and expr.args:
        enumerated = enumerated or last_name(expr.func) == "enumerate"
        expr = expr.args[0].value
    return expr, enumerated
