"""Selection never changes a verdict.

For every rule alone, the findings of the normal run (which skips the code
without the rule's NEEDS words) equal those of the same rule run over the
whole file (``full=True``), and equal that rule's share of an all-rules run:
over every fixture, every hostile input, re-spellings of every fixture
(``respell``) and a sample of the installed torch package (all of it in
``benchmarks/equivalence.py``). Words and units are tested on their own too.
"""

from __future__ import annotations

import ast
import functools
from collections import Counter
from pathlib import Path
from typing import Optional

import pytest

from corpus_support import day_offset
from fixture_cases import FIXTURES, all_cases
from respell import respellings
from flake8_torchdevice import words
from flake8_torchdevice.engine import check_source
from flake8_torchdevice.rules import ALL_RULES, RULES_BY_CODE
from flake8_torchdevice.selection import Hit

CASES = all_cases()


def findings(source: str, rules=ALL_RULES, full: bool = False) -> list[tuple]:
    return list(_findings(source, tuple(rules), full))


@functools.lru_cache(maxsize=64)  # a re-spelling's all-rules run is asked for twice
def _findings(source: str, rules: tuple, full: bool) -> tuple:
    result = check_source(source, rules=list(rules), full=full, strict=True)
    return tuple((v.line, v.col, v.code) for v in result.violations) if result.error is None else (("error",),)


def differences(source: str, alone=ALL_RULES) -> list[str]:
    """Every way the selective run differs from the whole-file run, for all
    rules together and for each rule of ``alone`` run alone; empty when none.

    A file that Python rejects is an error for every run. One whose
    whole-file parse only LibCST fails (``(x): int = 1``, 1000 nested
    ``not``) has no reference: the selective run checks what LibCST can
    read, so it is left out here (``test_hostile_inputs`` pins it)."""
    found = []
    whole = findings(source, full=True)
    if whole == [("error",)] and _python_reads(source):
        return []  # LibCST's own limit (a construct it rejects, nesting depth)
    together = findings(source)
    if together != whole:
        found.append(f"all rules: {together} != whole file {whole}")
    for rule in alone:
        alone_found = findings(source, [rule])
        share = [f for f in whole if f[-1] == rule.CODE or f == ("error",)]
        if alone_found != share:
            found.append(f"{rule.CODE} alone: {alone_found} != its share of the whole-file run {share}")
    return found


def _python_reads(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _todays(index: int, day: int) -> bool:
    """The exhaustive tests below take half the fixtures a day (UTC), each fixture every
    other day (CI's time budget); ``day`` is one of four, ``corpus_support.day_offset(4)``."""
    return index % 2 == day % 2


TODAY = day_offset(4)


@pytest.mark.exhaustive
@pytest.mark.parametrize("case", [c for n, c in enumerate(CASES) if _todays(n, TODAY)], ids=lambda c: c.id)
def test_every_rule_alone_equals_the_whole_file_run_on_fixtures(case):
    assert differences(case.path.read_text(encoding="utf-8")) == []


def _fully_checked(index: int, forms: list, day: int) -> Optional[int]:
    """Which re-spelling of the ``index``-th fixture has every rule run alone on ``day``:
    every other fixture of the day's half one, in turn, so every form gets it on many
    fixtures a day (a test below says so: eight each) and every fixture gets it every four
    days, at a fraction of the cost of all forms on all (CI's time budget); the fixture
    itself has every rule alone above."""
    return None if (index // 2) % 2 != day // 2 else (index // 4) % len(forms)


def _concerned(case, whole: list[tuple]) -> list:
    """The rules a fixture is about: its directory's and those it reports."""
    codes = {case.path.parent.name} | {f[-1] for f in whole}
    return [rule for rule in ALL_RULES if rule.CODE in codes]


@pytest.mark.exhaustive
@pytest.mark.parametrize("index", [n for n in range(len(CASES)) if _todays(n, TODAY)],
                         ids=[c.id for n, c in enumerate(CASES) if _todays(n, TODAY)])
def test_respellings_change_no_verdict(index):
    """Layout is not meaning: each re-spelling (same ``ast``) has the same
    findings per code as the fixture, and its own selective run equals its
    whole-file run, for all rules together and for the fixture's rules alone;
    on every other fixture of the day, one re-spelling in turn is checked with every rule alone."""
    case = CASES[index]
    source = case.path.read_text(encoding="utf-8")
    base = Counter(code for *_, code in findings(source))
    forms = list(respellings(source))
    assert len(forms) >= 2, "too few re-spellings apply: the fuzzer no longer exercises this fixture"
    concerned = _concerned(case, findings(source, full=True))
    for number, (name, text) in enumerate(forms):
        assert Counter(code for *_, code in findings(text)) == base, name
        alone = ALL_RULES if number == _fully_checked(index, forms, TODAY) else concerned
        assert differences(text, alone) == [], name


@pytest.mark.parametrize("day", range(4))
def test_respellings_cover_every_form_they_promise(day):
    """On each of the four days, each re-spelling applies to some of the day's fixtures and
    has every rule run alone on at least eight: none is silently dead or only lightly checked;
    over the four days every fixture is taken twice and has one form checked with every rule."""
    from respell import RESPELLINGS

    used, fully = Counter(), Counter()
    for index, case in enumerate(CASES):
        if not _todays(index, day):
            continue
        forms = list(respellings(case.path.read_text(encoding="utf-8")))
        used.update(name for name, _ in forms)
        chosen = _fully_checked(index, forms, day)
        if chosen is not None:
            fully[forms[chosen][0]] += 1
    assert set(used) == set(RESPELLINGS), used
    assert set(fully) == set(RESPELLINGS) and min(fully.values()) >= 8, fully
    assert all(sum(_todays(n, d) for d in range(4)) == 2 for n in range(len(CASES)))
    assert all(sum(_fully_checked(n, ["a"], d) is not None for d in range(4) if _todays(n, d)) == 1
               for n in range(len(CASES)))


def test_hostile_inputs_give_the_same_findings_either_way():
    from test_hostile_inputs import CASES as HOSTILE

    for case in HOSTILE:
        text = case.data.decode("utf-8", "replace") if isinstance(case.data, bytes) else case.data
        assert differences(text) == [], case.name


def _torch_sample(step: int = 150) -> list[Path]:
    """Every ``step``-th file of the installed torch package, from an offset that moves on each
    day (UTC): the same files all day, the whole package over ``step`` days."""
    pytest.importorskip("torch")
    from corpus_support import day_offset, torch_files

    return list(torch_files()[day_offset(step)::step])


@pytest.mark.slow
def test_torch_sample_gives_the_same_findings_either_way():
    """About 15 files of the installed torch package (``_torch_sample``: a third of what it was,
    for CI's time budget);
    ``benchmarks/equivalence.py`` runs all of them."""
    bad = {}
    for path in _torch_sample():
        found = differences(path.read_text(encoding="utf-8"))
        if found:
            bad[str(path)] = found
    assert bad == {}


# -- the table of issue 13: each case through each code alone -----------------
TABLE = {
    "backslash before .to": (
        "import torch\ndef f(d):\n    x = torch.zeros(2)\n    x \\\n        .to('cuda')\n", "TDV102", 4
    ),
    "parenthesised .to": ("import torch\ndef f():\n    y = torch.ones(2)\n    (y\n     .to('cpu'))\n", "TDV102", 4),
    "comment inside torch.load": (
        "import torch; device = 'cpu'\nstate = (torch  # comment\n         .load('a.pt'))\n", "TDV201", 2
    ),
    "DDP of m.eval()": (
        "import torch\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
        "def f(Net):\n    m = Net()\n    return DDP(m.eval(), device_ids=[0])\n",
        "TDV301",
        5,
    ),
    "spaced torch . ones": ("import torch\ndef f(x: torch.Tensor, n):\n    return x * torch . ones(n)\n", "TDV502", 3),
    "broken (torch .zeros": (
        "import torch\ndef f(x: torch.Tensor, n):\n    return x + (torch\n        .zeros(n))\n",
        "TDV502",
        3,
    ),
}


@pytest.mark.parametrize("name", TABLE)
def test_issue_table_rows_are_found_by_their_code_alone(name):
    source, code, line = TABLE[name]
    rule = next(rule for rule in ALL_RULES if rule.CODE == code)
    assert [(found[0], found[2]) for found in findings(source, [rule])] == [(line, code)]
    assert differences(source) == []


# -- words -------------------------------------------------------------------
@pytest.mark.parametrize(
    "text, word, expected",
    [
        ("x.to(d)", ".to", 1),
        ("x . to(d)", ".to", 1),
        ("x \\\n    .to(d)", ".to", 1),
        ("(x  # why\n .to(d))", ".to", 1),
        ("(x.  # why\n to(d))", ".to", 1),
        ("go to the shop", ".to", 0),
        ("total = to_device(x)", ".to", 0),
        ("torch.load(p)", "load", 1),
        ("reload(p); loader(p); _load(p)", "load", 0),
        ('"cuda:1"', "cuda", 1),
        ("use_cuda", "cuda", 0),
        ("x.to(cfg.cpu_device)", "*cpu", 1),
        ("ON_CPU = True", "*cpu", 1),
        ('d = "c" "pu"', "*cpu", 1),
        ("x.to(device)", "*cpu", 0),
        ("torch.zeros(3)", "zeros(", 1),
        ("(torch.zeros  # why\n )(3)", "zeros(", 1),
        ("z = torch.zeros\nz(3)", "zeros(", 1),
        ("x: zeros = 1; torch.zeros.__doc__", "zeros(", 0),
        ("f(device=d)", "device=", 1),
        ("f(device  # why\n  = d)", "device=", 1),
        ("def f(device=None): return device == d", "device=", 0),
        ('x.to("cuda")', 'cuda"', 1),
        ("torch.device('cuda')", 'cuda"', 1),
        ('f(device="cu" "da")', 'cuda"', 1),  # joined literals: over-match, never under-match
        ('torch.cuda.is_available(); "cuda:0"; use_cuda', 'cuda"', 0),
    ],
)
def test_word_offsets(text, word, expected):
    assert len(list(words.offsets(text, word))) == expected


def test_identifiers_are_a_superset_of_every_word_found():
    text = "import torch as th\nx = th.load(p)  # load\ns = 'cuda:1'\n"
    present = words.identifiers(text)
    assert {"th", "load", "cuda", "torch", "x", "p", "s"} <= present
    assert words.present([frozenset({"load"}), frozenset({".cuda", "nothing"})], present)
    assert not words.present([frozenset({"save"})], present)


def test_aliases_follow_the_resolvers_bindings_to_a_fixpoint():
    source = (
        "import torch\nfrom torch import load as tl\nf = torch.load\ng = f\n"
        "import torch.cuda as tc\nh = tl(1)\nsave = torch.save\n"
    )
    assert words.alias_words(ast.parse(source), {"load", "cuda"}) == {"tl", "f", "g", "tc"}


def test_an_alias_named_as_its_target_is_a_word_of_its_own():
    # ``autocast = torch.cuda.amp.autocast`` (in a ``try``, a fallback class in its ``except``): the
    # plain ``autocast(...)`` of a method is TDV701's ``.autocast``, and run alone the rule once
    # parsed no method for it.
    source = (
        "import torch\ntry:\n    autocast = torch.cuda.amp.autocast\nexcept AttributeError:\n"
        "    class autocast:\n        pass\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
        "        with autocast(enabled=True):\n            return x\n"
    )
    assert words.alias_words(ast.parse(source), {"autocast"}) == {"autocast"}
    assert differences(source) == []
    assert findings(source, [RULES_BY_CODE["TDV701"]]) == [(11, 13, "TDV701")]


def test_an_alias_call_far_from_its_import_is_found():
    source = "from torch import load as restore\n" + "\n" * 50 + "def f(p):\n    return restore(p)\n"
    assert findings(source) == [(53, 11, "TDV201")] == findings(source, full=True)


@pytest.mark.parametrize("importing", [
    "from torch import load", "from torch import (\n        save,\n        load,\n    )",
    "from torch.serialization import \\\n        load",
])
def test_a_load_imported_by_its_own_name_inside_a_function_is_found(importing):
    # TDV201 needs an attribute ``.load`` or a name bound to torch.load: a plain ``load``
    # imported under its own name, at any depth, is one.
    source = f"def restore(path):\n    {importing}\n    return load(path)\n"
    line = source.count("\n")
    assert findings(source) == [(line, 11, "TDV201")] == findings(source, full=True)


@pytest.mark.parametrize("source, imported", [
    ("from torch import (\n  save,\n  load,\n)\n", True), ("from torch import \\\n    load\n", True),
    ("def f():\n    from torch.serialization import load as l, save\n", True), ("from . import load\n", True),
    ("from torch \\\n  import load", True), ("from torch import a, \\\n   load", True),
    ("if x: from torch import load\n", True), ("x = 1; from torch import load\n", True),
    ("import torch\nx.load()\n", False), ("from torch import loads\n", False), ("load = 1  # from x import y\n", False),
    ("from torch . serialization import load\n", True), ("from torch \\\n  .serialization import load\n", True),
    ("from .. import load\n", True),
])
def test_names_imported_by_their_own_name(source, imported):
    assert ("load" in words.names_imported_from(source)) is imported


def test_a_class_whose_only_load_is_its_own_method_parses_nothing_for_tdv201():
    from flake8_torchdevice.engine import _Scan, _rule_hits
    from flake8_torchdevice.selection import StatementIndex

    source = (
        "import torch\n\n\nclass Store:\n    def load(self, path):\n        return self.read(path)\n\n"
        "    def save(self):\n        self.data.cuda()\n\n    def restore(self, p):\n        return load(self, p)\n"
    )
    tree = ast.parse(source)
    scan = _Scan(source, tree, words.identifiers(source))
    assert _rule_hits(scan, RULES_BY_CODE["TDV201"], StatementIndex(tree)) == []  # its READS alone keep nothing
    assert findings(source, [RULES_BY_CODE["TDV201"]]) == [] == findings(source, [RULES_BY_CODE["TDV201"]], full=True)


def test_an_import_gives_a_definition_no_word_it_needs():
    from flake8_torchdevice.engine import _Scan, _rule_hits
    from flake8_torchdevice.selection import StatementIndex

    rule = RULES_BY_CODE["TDV601"]
    quiet = "from torch import Tensor, zeros\n\n\ndef move(x: Tensor, device):\n    return x.to(device)\n"
    tree = ast.parse(quiet)
    assert _rule_hits(_Scan(quiet, tree, words.identifiers(quiet)), rule, StatementIndex(tree)) == []
    called = quiet + "\n\ndef run(device):\n    w = zeros(3)\n    return w + zeros(3).to(device)\n"
    assert findings(called, [rule]) == [(10, 11, "TDV601")] == findings(called, [rule], full=True)


def test_a_flow_rule_finds_a_cpu_destination_named_by_a_variable():
    # TDV601 parses only functions holding a placing word and a CPU word
    # (TOGETHER); a destination named like the CPU is one (``*cpu``).
    source = (
        "import torch\n\n\ndef make():\n    return torch.zeros(3)\n\n\n"
        "def run(cfg):\n    w = load()\n    a = w.cuda().to(cfg.cpu_dev)\n    return a + w.cuda()\n"
    )
    rule = [RULES_BY_CODE["TDV601"]]
    assert findings(source, rule) == [(11, 11, "TDV601")] == findings(source, rule, full=True)


@pytest.mark.parametrize("made", [
    "        self.state = torch.zeros(2, 4)\n",
    "        if flag:\n            self.state = torch.zeros(2, 4)\n",  # made on one path only
])
def test_a_method_without_words_reading_init_facts_is_kept_for_the_flow(made):
    # ``act`` holds no word of TDV601: it meets what ``__init__`` proves (a placed policy, a CPU
    # state). Run alone, the rule must parse it as the whole-file run does (it once did not).
    source = (
        "import torch\n\n\nclass Agent:\n    def __init__(self, policy, flag):\n"
        "        self.policy = policy.cuda()\n" + made + "\n    def act(self, obs):\n"
        "        return self.policy(obs, self.state)\n"
    )
    line = 11 if "if flag" in made else 10
    assert differences(source) == []
    assert findings(source, [RULES_BY_CODE["TDV601"]]) == [(line, 15, "TDV601")]


def test_a_function_called_by_another_that_places_is_kept_with_it():
    # ``summarize`` meets what ``main`` hands it (flow/callers.py): neither holds every word TDV601
    # needs, yet run alone the rule must parse both, as the whole-file run does.
    source = (
        "import torch\nfrom torch import nn\n\n\ndef summarize(model):\n    dummy = torch.randn(1, 8)\n"
        "    return model(dummy).shape\n\n\ndef main():\n    model = nn.Linear(8, 3).to(\"cuda\")\n"
        "    print(summarize(model))\n"
    )
    assert differences(source) == []
    assert findings(source, [RULES_BY_CODE["TDV601"]]) == [(7, 11, "TDV601")]


def test_a_helper_whose_cpu_result_a_caller_meets_is_kept_with_it():
    # ``run`` meets what ``load`` returns (flow/callers.cpu_result): run alone, TDV601 must parse the
    # helper as the whole-file run does.
    source = (
        "import torch\nfrom torch import nn\n\n\ndef load(v):\n    return torch.tensor(v).unsqueeze(0)\n\n\n"
        "def run(v):\n    model = nn.Linear(4, 2).to(\"cuda\")\n    x = load(v)\n    return model(x)\n"
    )
    assert differences(source) == []
    assert findings(source, [RULES_BY_CODE["TDV601"]]) == [(12, 11, "TDV601")]


def test_a_helper_whose_cpu_result_module_code_meets_is_kept_with_it():
    source = (
        "import torch\nfrom torch import nn\n\n\ndef pad(h):\n    return torch.zeros(len(h), 4)\n\n\n"
        "model = nn.Linear(4, 2).to(\"cuda\")\nout = model(pad([[1.0]]))\n"
    )
    assert differences(source) == []
    assert findings(source, [RULES_BY_CODE["TDV601"]]) == [(10, 6, "TDV601")]


def test_a_name_rebound_inside_a_function_changes_nothing_outside_it():
    # ``torch = kwargs["torch"]`` in one function made every later ``torch.*``
    # unknown, but only when that function was parsed: selection decided.
    source = (
        "import torch\n\n\ndef make(**kwargs):\n    torch = kwargs.get('torch')\n    return torch\n\n\n"
        "def restore(path):\n    return torch.load(path)\n\n\n"
        "def inner(path):\n    import torch as th\n    return th.load(path)\n\n\n"
        "def after(path):\n    return th.load(path)\n"
    )
    rule = [RULES_BY_CODE["TDV201"]]
    assert findings(source, rule) == [(10, 11, "TDV201"), (15, 11, "TDV201")] == findings(source, rule, full=True)


def test_a_class_body_binding_is_not_seen_by_its_methods():
    # Python skips the class body when a method looks a name up; so does the
    # resolver, or a class-level ``torch = ...`` would decide only when parsed.
    source = (
        "import torch\n\n\nclass Trainer:\n    torch = object()\n\n"
        "    def scaler(self):\n        return torch.cuda.amp.GradScaler()\n"
    )
    rule = [RULES_BY_CODE["TDV701"]]
    assert findings(source, rule) == [(8, 15, "TDV701")] == findings(source, rule, full=True)


_STATE_MODULE = (
    "import torch\nfrom torch import nn\n\n\nclass Acc(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n{init}\n\n    def forward(self, p, t):\n"
    "        self.correct += (p == t).sum()\n        return self.correct\n"
)


def _hits_of(code: str, source: str) -> list:
    from flake8_torchdevice.engine import _Scan, _rule_hits
    from flake8_torchdevice.selection import StatementIndex

    tree = ast.parse(source)
    return _rule_hits(_Scan(source, tree, words.identifiers(source)), RULES_BY_CODE[code], StatementIndex(tree))


def test_a_factory_inside_a_parameter_asks_tdv501_for_nothing():
    # ASSIGNED: a TDV501 finding is ``self.<attr> = factory(...)``; nn/modules' classes
    # (``nn.Parameter(torch.empty(...))`` in every __init__) were parsed whole for it.
    wrapped = _STATE_MODULE.format(init="        self.correct = nn.Parameter(torch.zeros(1))")
    assert _hits_of("TDV501", wrapped) == []
    rule = [RULES_BY_CODE["TDV501"]]
    assert findings(wrapped, rule) == [] == findings(wrapped, rule, full=True)


@pytest.mark.parametrize(
    "init",
    [
        "        self.correct = torch.zeros(1)",
        "        self.correct = torch.zeros(\n            1\n        ).long()",
        "        self.correct: torch.Tensor = torch . zeros(1)",
        "        z = torch.zeros\n        self.correct = z(1)",
        "        from torch import zeros as z\n        self.correct = z(1)",
        "        t = torch\n        self.correct = t.zeros(1)",
    ],
)
def test_every_spelling_of_an_assigned_factory_is_kept_for_tdv501(init):
    source = _STATE_MODULE.format(init=init)
    assert _hits_of("TDV501", source)
    rule = [RULES_BY_CODE["TDV501"]]
    found = findings(source, rule)
    assert found == findings(source, rule, full=True)
    assert [code for *_, code in found] == ["TDV501"]


def test_a_name_bound_to_a_value_is_no_alias_of_a_factory_for_tdv501():
    # ``tensor = output`` binds the word ``tensor`` to a value: no factory call can go through
    # it. ``tensor = torch.tensor`` is an alias, and is kept.
    other = _STATE_MODULE.format(init="        self.correct = None") + "def f(output):\n    tensor = output\n"
    assert _hits_of("TDV501", other) == []
    alias = _STATE_MODULE.format(init="        self.correct = tensor(0)") + "tensor = torch.tensor\n"
    assert _hits_of("TDV501", alias)
    rule = [RULES_BY_CODE["TDV501"]]
    assert [c for *_, c in findings(alias, rule)] == ["TDV501"] == [c for *_, c in findings(alias, rule, full=True)]


_RANGE = "import torch\ndef f(x):\n    y = x.to('cuda')\n    for i in {call}(3):\n        y = y + i\n    return y\n"


@pytest.mark.parametrize("call, imports, kept", [
    ("range", "", False),  # the builtin: no torch factory, no TDV601 word
    ("torch.range", "", True),
    ("range", "from torch import range\n", True),  # imported by its own name: the word keeps its call
])
def test_tdv601_factory_words_are_torch_calls_not_builtins(call, imports, kept):
    source = imports + _RANGE.format(call=call)
    assert bool(_hits_of("TDV601", source)) is kept
    rule = [RULES_BY_CODE["TDV601"]]
    assert findings(source, rule) == findings(source, rule, full=True)


def test_an_imported_word_keeps_its_call():
    # ``from torch import Tensor`` (for annotations) makes ``Tensor(`` a factory call, not
    # every line that names the type.
    source = "from torch import Tensor\ndef f(x: Tensor) -> Tensor:\n    return x.to('cuda') + Tensor(3)\n"
    lines = {line for line, _ in _hits_of("TDV601", source)}
    assert 3 in lines and 2 not in lines


def test_a_word_in_a_string_asks_tdv701_for_nothing():
    # ``why_not_fast_path = "autocast is enabled"`` in nn/modules made TDV701 parse the function.
    source = 'import torch\ndef f(x):\n    reason = "autocast is enabled"\n    return x\n'
    assert _hits_of("TDV701", source) == []
    used = source.replace("return x", "with torch.cuda.amp.autocast():\n        return x")
    assert _hits_of("TDV701", used)
    rule = [RULES_BY_CODE["TDV701"]]
    assert [c for *_, c in findings(used, rule)] == ["TDV701"] == [c for *_, c in findings(used, rule, full=True)]


def test_a_docstring_example_asks_for_nothing():
    # ``>>> optimizer.load_state_dict(torch.load(f))`` in a method's docstring made TDV201
    # read its READS (``save``, ``cpu``, ...) all over a 900-line class.
    source = (
        "import torch\nclass Opt:\n    def load_state_dict(self, state):\n"
        '        """Example:\n            >>> opt.load_state_dict(torch.load("x.pt"))\n        """\n'
        "        self.state = state\n\n    def save(self):\n        return self.state.cpu()\n"
    )
    assert _hits_of("TDV201", source) == []
    code = source.replace("        self.state = state\n", "        self.state = torch.load(state)\n")
    assert _hits_of("TDV201", code)


def test_tdv201_reads_keep_their_statements_not_their_definitions():
    # READS_SCOPE = STATEMENT: a CPU path in another function is one statement (with the
    # headers around it); its 40 other lines ask for no parsing. The verdict is the same.
    from flake8_torchdevice.engine import _Scan, _rule_hits
    from flake8_torchdevice.selection import StatementIndex, lines_to_keep

    filler = "".join(f"    x{i} = {i}\n" for i in range(40))
    source = (
        "import torch\n\ndef restore(path):\n    return torch.load(path)\n\n\n"
        "def main(args):\n" + filler + "    if args.no_cuda:\n        device = 'cpu'\n    return device\n"
    )
    tree = ast.parse(source)
    index = StatementIndex(tree)
    rule = RULES_BY_CODE["TDV201"]
    kept = lines_to_keep(index, [Hit(line, scope) for line, scope in
                                 _rule_hits(_Scan(source, tree, words.identifiers(source)), rule, index)])
    assert {3, 4, 7, 48, 49} <= kept and not kept & set(range(8, 48))
    assert findings(source, [rule]) == findings(source, [rule], full=True) == [(4, 11, "TDV201")]


def _table_module(hit_row: str) -> str:
    rows = "".join(f"    ({i}, {i + 1}),\n" for i in range(250))
    return (
        "import torch\n\ndevice = torch.device('cuda')\n"
        f"TABLE = [\n{rows}{hit_row}    (7,\n     8),\n]\n"
        "x = torch.zeros(3)\ny = x.cuda()\n"
    )


def test_a_large_table_keeps_only_the_rows_holding_a_word():
    from flake8_torchdevice.engine import _hits
    from flake8_torchdevice.selection import StatementIndex, lines_to_keep

    source = _table_module("    torch.zeros(2) + torch.ones(2).to(device),\n")
    tree = ast.parse(source)
    index = StatementIndex(tree)
    per_rule, context = _hits(source, tree, list(ALL_RULES), words.identifiers(source), index)
    keep = lines_to_keep(index, [hit for hits in per_rule.values() for hit in hits] + context)
    hit_row = 4 + 250 + 1
    assert hit_row in keep and 4 in keep and 258 in keep  # the row, ``TABLE = [`` and ``]``
    assert not keep & set(range(5, hit_row))  # 250 rows without a word: not parsed
    assert findings(source) == findings(source, full=True)
    assert (hit_row, 4, "TDV601") in findings(source)


def test_every_device_position_of_tdv401_holds_a_needed_word():
    # torch.set_default_device(1) was a device position without one: the
    # selective run skipped the function that the whole-file run reported.
    source = (
        "import torch\n\n\ndef a(x):\n    return x.to('cpu')\n\n\n"
        "def b():\n    torch.set_default_device(1)\n\n\n"
        "def c():\n    gpu = 2\n    torch.set_default_device(gpu)\n"
    )
    rule = [RULES_BY_CODE["TDV401"]]
    assert findings(source, rule) == [(9, 29, "TDV401"), (13, 10, "TDV401")] == findings(source, rule, full=True)


def test_every_rule_declares_words_and_a_known_scope():
    for rule in ALL_RULES:
        assert rule.GROUPS and all(rule.GROUPS), rule.CODE
        assert rule.SCOPE in ("statement", "function", "class"), rule.CODE


def test_fixtures_directory_is_where_the_cases_come_from():
    assert all(case.path.is_relative_to(FIXTURES) for case in CASES)


_LAYERED = (
    "import torch\nfrom torch import nn\n\n\nclass Tower(nn.Module):\n    def __init__(self):\n"
    "        super().__init__()\n{init}\n\n    def forward(self, x):\n        return x\n"
)


@pytest.mark.parametrize(
    "init, parsed",
    [
        ("        self.layers = [nn.Linear(2, 2) for _ in range(3)]", True),
        ("        self.heads = {}\n        self.heads['a'] = nn.Linear(2, 2)", True),
        ("        self.pair: tuple = (\n            nn.Linear(2, 2),\n            nn.Linear(2, 2),\n        )", True),
        ("        self.layer = nn.Linear(2, 2)", False),
        ("        self.net = nn.Sequential(nn.Linear(2, 2), nn.ReLU())", False),
        ("        layers = [nn.Linear(2, 2)]\n        self.net = nn.Sequential(*layers)", False),
        # a display reaching the attribute through a local name
        ("        layers = []\n        layers.append(nn.Linear(2, 2))\n        self.layers = layers", True),
    ],
)
def test_tdv503_parses_only_a_class_that_assigns_a_display_to_an_attribute(init, parsed):
    # DISPLAYED: every TDV503 finding is a display assigned to an attribute; a module class
    # without one (most of torch.nn) is not parsed for it.
    source = _LAYERED.format(init=init)
    assert bool(_hits_of("TDV503", source)) is parsed
    rule = [RULES_BY_CODE["TDV503"]]
    found = findings(source, rule)
    assert found == findings(source, rule, full=True)
    assert [code for *_, code in found] == (["TDV503"] if parsed else [])


def test_a_call_of_the_files_own_module_class_is_a_cpu_word_for_the_flow():
    # ``run`` holds a placing word and, as its only CPU evidence, a call of this file's module
    # class (a CPU module): the selection must parse it for TDV601 run alone, as the whole file does.
    source = (
        "from torch import nn\n\n\nclass Net(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.fc = nn.Linear(4, 2)\n\n    def forward(self, x):\n"
        "        return self.fc(x)\n\n\ndef run(x, args):\n    net = Net()\n    return net(x.to(args.device))\n"
    )
    assert differences(source) == []
    assert findings(source, [RULES_BY_CODE["TDV601"]]) == [(15, 11, "TDV601")]


def test_each_rule_walks_the_top_level_statements_its_own_hits_keep():
    from flake8_torchdevice.selection import CONTEXT, Hit, StatementIndex, tops_to_walk

    source = (
        "import torch\n"                      # 1
        "x = 1\n"                             # 2
        "def f(a):\n"                         # 3
        "    return a.cuda()\n"               # 4
        "def g(b):\n"                         # 5
        "    if torch.cuda.is_available():\n"  # 6
        "        return b\n"                  # 7
        "class C:\n"                          # 8
        "    y = torch.load(p)\n"             # 9
    )
    index = StatementIndex(ast.parse(source))
    assert tops_to_walk(index, [Hit(4, "statement")]) == {3}  # a hit in a definition: that definition
    assert tops_to_walk(index, [Hit(9, "class")]) == {8}
    assert tops_to_walk(index, [Hit(6, CONTEXT)]) == set()  # a context word alone keeps no definition
    assert tops_to_walk(index, [Hit(2, "statement")]) == {1, 2}  # module code: all of it
    assert tops_to_walk(index, [Hit(4, "statement"), Hit(2, CONTEXT)]) == {2, 3}


def test_rules_that_walk_different_statements_report_as_they_do_alone_and_on_the_whole_file():
    source = (
        "import torch\n"
        "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "def load(path):\n"
        "    return torch.load(path)\n"
        "def place(model):\n"
        "    model.to(device)\n"
        "    return model.cuda()\n"
        "def ordinal():\n"
        "    return torch.zeros(2, device='cuda:1')\n"
    )
    together = findings(source)
    assert together == findings(source, full=True)
    assert {code for _, _, code in together} >= {"TDV101", "TDV201", "TDV401"}
    for code in {code for _, _, code in together}:
        alone = findings(source, [RULES_BY_CODE[code]])
        assert alone == [f for f in together if f[2] == code], code


# Findings the selective run once missed while the whole-file run reported them; other rules' kept lines had
# shown them to the rule, until each rule walked only its own statements.
_ONCE_HIDDEN = {
    # TDV603 needs a NumPy word and a placement; the caller places, its callee reads with NumPy, and the
    # flow follows the placed value into the callee: definitions linked by calls meet the groups together.
    # Reported at the caller's call that hands the placed value (flow/sinks.py), in the other definition.
    "callee of a placing caller": (
        "import numpy\n"
        "import torch\n"
        "def show(images):\n"
        "    for t in range(images.shape[0]):\n"
        "        img = numpy.uint8(images[t])\n"
        "def run(x):\n"
        "    out = x.cuda() * 2\n"
        "    show(out.data)\n",
        (8, 4, "TDV603"),
    ),
    # TDV110's state form: the guess is a factory's device=, and the class has no .to( at all.
    "state made on a guessed device": (
        "import torch\n"
        "from torch import nn\n"
        "class PositionalEncoding(nn.Module):\n"
        "    def __init__(self, dim, n):\n"
        "        super().__init__()\n"
        "        guess = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
        "        self.pe = torch.zeros((1, dim, n), device=guess)\n"
        "    def forward(self, x):\n"
        "        return x + self.pe[:, :, :x.size(2)]\n",
        (7, 18, "TDV110"),
    ),
}


@pytest.mark.parametrize("case", sorted(_ONCE_HIDDEN))
def test_a_finding_of_the_whole_file_run_is_found_alone_and_together(case):
    source, finding = _ONCE_HIDDEN[case]
    rule = [RULES_BY_CODE[finding[2]]]
    assert findings(source, rule, full=True) == [finding]
    assert findings(source, rule) == findings(source) == [finding]
