"""``torchdevice server``: the language server, driven over stdio by a real LSP client
(tests/lsp_support.py) as an editor drives it."""

from __future__ import annotations

import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flake8_torchdevice.fixes import fix_source
from lsp_support import Client, apply

pytest.importorskip("pygls")

TEXT = "import torch\nstate = torch.load('a.pt')\ndevice = 'cpu'\nscaler = torch.cuda.amp.GradScaler()\n"
TDV101 = (
    "import torch\n"
    "device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n"
    "x = torch.zeros(1).cuda()\n"
    "y = x.to(device)\n"
)


@pytest.fixture
def client(tmp_path):
    client = Client(tmp_path)
    client.initialize(tmp_path)
    yield client
    if client.process.poll() is None:
        client.process.kill()
        client.process.wait(timeout=30)


def _actions(client, uri, line, only=None):
    context = {"diagnostics": [], **({"only": only} if only else {})}
    rng = {"start": {"line": line, "character": 0}, "end": {"line": line, "character": 0}}
    return client.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": rng,
                                                      "context": context})["result"]


def _change(client, uri, version, text):
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                             "contentChanges": [{"text": text}]})


def test_capabilities(tmp_path):
    client = Client(tmp_path)
    capabilities = client.initialize(tmp_path)["capabilities"]
    assert capabilities["codeActionProvider"]["codeActionKinds"] == ["quickfix", "source.fixAll.torchdevice"]
    assert capabilities["executeCommandProvider"]["commands"] == ["torchdevice.fixAll"]
    assert capabilities["textDocumentSync"]["openClose"] is True
    assert client.shutdown() == 0


def test_diagnostics_on_open_with_code_rule_page_and_severity(client, tmp_path):
    uri = client.open(tmp_path / "m.py", TEXT)
    diagnostics = client.diagnostics(uri)
    assert [(d["code"], d["range"]["start"]["line"], d["range"]["start"]["character"]) for d in diagnostics] == [
        ("TDV201", 1, 8), ("TDV701", 3, 9)]
    assert diagnostics[0]["message"].endswith(" [torch-load-without-map-location]")
    for diagnostic in diagnostics:
        assert diagnostic["severity"] == 2 and diagnostic["source"] == "torchdevice"
        page = Path(diagnostic["codeDescription"]["href"].removeprefix("file://"))
        assert page.read_text(encoding="utf-8").startswith(f"# {diagnostic['code']}")


def test_quick_fixes_noqa_and_fix_all(client, tmp_path):
    uri = client.open(tmp_path / "m.py", TEXT)
    client.diagnostics(uri)
    actions = _actions(client, uri, 1)
    assert [(a["title"], a["kind"]) for a in actions] == [
        ("Fix TDV201", "quickfix"),
        ("Suppress TDV201 with # noqa: TDV201", "quickfix"),
        ("Fix all safe TDV findings in this file", "source.fixAll.torchdevice"),
    ]
    fix, noqa, fix_all = (apply(TEXT, a["edit"]["changes"][uri]) for a in actions)
    assert fix.splitlines()[1] == "state = torch.load('a.pt', map_location=\"cpu\")"
    assert noqa.splitlines()[1] == "state = torch.load('a.pt')  # noqa: TDV201"
    assert fix_all == fix_source(TEXT)  # the same fixes as `torchdevice --fix`
    only = _actions(client, uri, 1, only=["source.fixAll"])
    assert [a["kind"] for a in only] == ["source.fixAll.torchdevice"]


def test_an_unsafe_fix_is_offered_marked(client, tmp_path):
    uri = client.open(tmp_path / "m.py", TDV101)
    assert [d["code"] for d in client.diagnostics(uri)] == ["TDV101"]
    fix = _actions(client, uri, 2)[0]
    assert fix["title"] == "Fix TDV101 (unsafe: changes behaviour)" and fix["isPreferred"] is False
    assert apply(TDV101, fix["edit"]["changes"][uri]).splitlines()[2] == "x = torch.zeros(1).to(device)"
    assert not any(a["kind"] == "source.fixAll.torchdevice" for a in _actions(client, uri, 2))  # safe ones only


def test_execute_command_applies_the_fix_all_edit(client, tmp_path):
    uri = client.open(tmp_path / "m.py", TEXT)
    client.diagnostics(uri)
    response = client.request("workspace/executeCommand", {"command": "torchdevice.fixAll", "arguments": [uri]})
    assert "error" not in response, response
    assert len(client.applied) == 1 and apply(TEXT, client.applied[0]["changes"][uri]) == fix_source(TEXT)


def test_changes_are_linted_and_a_burst_ends_on_the_newest_version(client, tmp_path):
    uri = client.open(tmp_path / "m.py", TEXT)
    client.diagnostics(uri)
    for version in range(2, 12):
        _change(client, uri, version, TEXT + f"z{version} = 1\n")
    _change(client, uri, 12, "import torch\nscaler = torch.cuda.amp.GradScaler()\n")
    versions = []
    while True:
        message = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        versions.append(message["params"]["version"])
        if versions[-1] == 12:
            break
    assert versions == sorted(versions) and len(versions) <= 11  # never an older version after a newer one
    assert [d["code"] for d in message["params"]["diagnostics"]] == ["TDV701"]


def test_a_file_that_does_not_parse_gets_one_diagnostic(client, tmp_path):
    uri = client.open(tmp_path / "m.py", "x = (\n")
    (diagnostic,) = client.diagnostics(uri)
    assert diagnostic["severity"] == 1 and "syntax error" in diagnostic["message"]
    _change(client, uri, 2, TEXT)
    assert [d["code"] for d in client.diagnostics(uri)] == ["TDV201", "TDV701"]  # still serving
    assert _actions(client, uri, 1)  # and answering


def test_pyproject_selection_is_read_and_reloaded(client, tmp_path):
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.torchdevice]\nextend-ignore = ["TDV201"]\n', encoding="utf-8")
    uri = client.open(tmp_path / "m.py", TEXT)
    assert [d["code"] for d in client.diagnostics(uri)] == ["TDV701"]
    pyproject.write_text('[tool.torchdevice]\nextend-ignore = ["TDV701"]\n', encoding="utf-8")
    client.notify("workspace/didChangeWatchedFiles", {"changes": [{"uri": pyproject.as_uri(), "type": 2}]})
    assert [d["code"] for d in client.diagnostics(uri)] == ["TDV201"]


def test_shutdown_exit_and_ctrl_c(tmp_path):
    client = Client(tmp_path)
    client.initialize(tmp_path)
    assert client.shutdown() == 0
    interrupted = Client(tmp_path)
    interrupted.initialize(tmp_path)
    interrupted.process.send_signal(signal.SIGINT)
    assert interrupted.process.wait(timeout=30) == 130
    assert interrupted.process.stderr.read().decode().splitlines() == ["torchdevice: interrupted"]


def test_without_pygls_one_line_and_exit_2(tmp_path):
    code = ("import sys; sys.modules['pygls'] = None; from flake8_torchdevice.cli import main; "
            "sys.exit(main(['server']))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "torchdevice: error: the language server needs pygls: pip install 'flake8-torchdevice[lsp]'"]


def test_a_change_is_answered_quickly(client, tmp_path):
    """didChange to publishDiagnostics on a 951-line torch module (docs/performance.md has
    the measured median; this bound only catches a server that stopped being warm)."""
    torch = pytest.importorskip("torch")
    text = (Path(torch.__file__).parent / "optim" / "adam.py").read_text(encoding="utf-8")
    uri = client.open(tmp_path / "adam.py", text)
    client.diagnostics(uri, timeout=60)
    lines = text.split("\n")
    middle = len(lines) // 2  # an edit inside a large function: that definition is parsed again
    times = []
    for version in range(2, 22):
        edited = "\n".join([*lines[:middle], lines[middle] + f"  # edit {version}", *lines[middle + 1:]])
        start = time.perf_counter()
        _change(client, uri, version, edited)
        client.diagnostics(uri, timeout=60)
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    print(f"\ndidChange -> publishDiagnostics, {len(lines)}-line adam.py, an edit at line {middle + 1}, median of 20: "
          f"{median * 1000:.1f} ms")
    assert median < 0.5, times


def test_notebook_cells_get_their_own_diagnostics(client, tmp_path):
    notebook = (tmp_path / "nb.ipynb").as_uri()
    cells = [f"{notebook}#cell{i}" for i in (1, 2, 3)]
    texts = ["import torch\n", "x = 1\n", "y = 2\nscaler = torch.cuda.amp.GradScaler()\n"]
    client.notify("notebookDocument/didOpen", {
        "notebookDocument": {"uri": notebook, "notebookType": "jupyter-notebook", "version": 1,
                             "cells": [{"kind": 2, "document": cell} for cell in cells]},
        "cellTextDocuments": [{"uri": cell, "languageId": "python", "version": 1, "text": text}
                              for cell, text in zip(cells, texts)],
    })
    published = {}
    while len(published) < 3:
        message = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics")
        published[message["params"]["uri"]] = message["params"]["diagnostics"]
    assert [[(d["code"], d["range"]["start"]["line"]) for d in published[cell]] for cell in cells] == [
        [], [], [("TDV701", 1)]]


def test_a_bad_configuration_and_an_unopened_save_are_answered_not_raised(client, tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.torchdevice]\nselect = ["XYZ1"]\n', encoding="utf-8")
    uri = client.open(tmp_path / "m.py", TEXT)
    (diagnostic,) = client.diagnostics(uri)
    assert diagnostic["severity"] == 1 and diagnostic["message"].startswith("pyproject.toml: ")
    client.notify("textDocument/didSave", {"textDocument": {"uri": (tmp_path / "never_opened.py").as_uri()}})
    response = client.request("textDocument/codeAction", {
        "textDocument": {"uri": uri}, "context": {"diagnostics": []},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}})
    assert response["result"] == [] and client.process.poll() is None
