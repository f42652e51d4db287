"""LibCST loads only for a file that needs a parse (issue 8: editor saves).

Each check runs in a fresh interpreter: this test process has loaded LibCST
long ago. Startup cost itself is measured by ``benchmarks/run.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

LOADED = "'libcst._nodes.expression' in sys.modules"

PLAIN = "import os\n\n\ndef f(x):\n    return os.path.join(x, 'a')\n"
TRIGGERED = "import torch\n\n\ndef f():\n    return torch.cuda.amp.GradScaler()\n"  # TDV701, on by default
# Words only an opt-in rule needs (TDV502's factory ``torch.zeros`` in a function; TDV501 also
# needs an ``__init__`` around it) parse nothing unless it is selected.
OPT_IN_ONLY = "import torch\n\n\ndef f(x):\n    return x + torch.zeros(3)\n"
CASES = [("plain.py", PLAIN, False), ("uses.py", TRIGGERED, True), ("factory.py", OPT_IN_ONLY, False)]


def run_python(code: str, *files: tuple[str, str], tmp_path) -> dict:
    for name, text in files:
        (tmp_path / name).write_text(text, encoding="utf-8")
    script = textwrap.dedent(code)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


FLAKE8 = """
    import json, sys
    from flake8.main.cli import main
    try:
        main(["--select=TDV", "--output-file=out.txt", "{name}"])
    except SystemExit:
        pass
    print(json.dumps({{"loaded": {loaded}, "output": open("out.txt").read()}}))
"""


@pytest.mark.parametrize("name, text, loaded", CASES)
def test_flake8_loads_libcst_only_for_a_triggered_file(tmp_path, name, text, loaded):
    result = run_python(FLAKE8.format(name=name, loaded=LOADED), (name, text), tmp_path=tmp_path)
    assert result["loaded"] is loaded
    assert ("TDV701" in result["output"]) is loaded
    assert ("TDV" in result["output"]) is loaded


CLI = """
    import contextlib, io, json, sys
    from flake8_torchdevice.cli import main
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["{name}"])
    print(json.dumps({{"loaded": {loaded}, "code": code, "output": out.getvalue()}}))
"""


@pytest.mark.parametrize("name, text, loaded", CASES)
def test_cli_loads_libcst_only_for_a_triggered_file(tmp_path, name, text, loaded):
    result = run_python(CLI.format(name=name, loaded=LOADED), (name, text), tmp_path=tmp_path)
    assert result["loaded"] is loaded
    assert result["code"] == (1 if loaded else 0)
    assert ("TDV701" in result["output"]) is loaded
    assert ("TDV" in result["output"]) is loaded


def test_the_lazy_module_is_the_one_shared_copy(tmp_path):
    code = f"""
        import json, sys
        from flake8_torchdevice._lazy import cst, lazy_module
        before = {LOADED}
        import libcst.metadata  # another importer: same package, now loaded
        print(json.dumps({{
            "before": before,
            "after": {LOADED},
            "shared": sys.modules["libcst"] is cst and lazy_module("libcst") is cst,
            "works": cst.parse_module("x = 1\\n").code == "x = 1\\n",
        }}))
    """
    assert run_python(code, tmp_path=tmp_path) == {"before": False, "after": True, "shared": True, "works": True}


def test_a_module_imported_before_is_used_as_it_is(tmp_path):
    code = """
        import json, sys
        import libcst
        from flake8_torchdevice._lazy import cst
        print(json.dumps({"same": cst is libcst, "plain": type(cst).__name__ == "module"}))
    """
    assert run_python(code, tmp_path=tmp_path) == {"same": True, "plain": True}
