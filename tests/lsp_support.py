"""A small LSP client over stdio for the server tests: JSON-RPC with Content-Length
framing, as editors speak it. It answers the server's own requests
(``workspace/applyEdit`` is applied to the client's copy of the document)."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Optional

from cli_support import SCRIPT


class Client:
    def __init__(self, cwd: Path, env: Optional[dict] = None, command: Optional[list] = None) -> None:
        self.process = subprocess.Popen(
            [*(command or SCRIPT), "server"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, env={**os.environ, **(env or {})},
        )
        self.messages: queue.Queue = queue.Queue()
        self.applied: list = []  # the edits the server asked the client to apply
        self._next = 0
        threading.Thread(target=self._read, daemon=True).start()

    # -- wire ---------------------------------------------------------------
    def _send(self, payload: dict) -> None:
        body = json.dumps(payload).encode("utf-8")
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            headers = {}
            while True:
                line = stream.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            self.messages.put(json.loads(stream.read(int(headers["content-length"]))))

    # -- requests and notifications -----------------------------------------
    def notify(self, method: str, params: dict) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Optional[dict] = None, timeout: float = 30) -> dict:
        self._next += 1
        ident = self._next
        self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == ident and "method" not in m, timeout)

    def wait(self, match, timeout: float = 30) -> dict:
        """The next message ``match`` accepts; the server's requests are answered meanwhile."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.messages.get(timeout=max(deadline - time.monotonic(), 0.01))
            if "method" in message and "id" in message:
                self._answer(message)
            if match(message):
                return message

    def diagnostics(self, uri: str, timeout: float = 30) -> list:
        message = self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and m["params"]["uri"] == uri, timeout)
        return message["params"]["diagnostics"]

    def _answer(self, message: dict) -> None:
        result = None
        if message["method"] == "workspace/applyEdit":
            self.applied.append(message["params"]["edit"])
            result = {"applied": True}
        self._send({"jsonrpc": "2.0", "id": message["id"], "result": result})

    # -- session --------------------------------------------------------------
    def initialize(self, root: Path) -> dict:
        result = self.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(),
                                             "capabilities": {"workspace": {"applyEdit": True}}})
        self.notify("initialized", {})
        return result["result"]

    def open(self, path: Path, text: str, version: int = 1) -> str:
        uri = path.as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                              "version": version, "text": text}})
        return uri

    def shutdown(self) -> int:
        self.request("shutdown")
        self.notify("exit", {})
        return self.process.wait(timeout=30)


def apply(text: str, edits: list) -> str:
    """``text`` with LSP TextEdits applied (whole-line ranges, ASCII test documents)."""
    lines = text.splitlines(keepends=True)
    for edit in sorted(edits, key=lambda e: (e["range"]["start"]["line"], e["range"]["start"]["character"]),
                       reverse=True):
        start, end = edit["range"]["start"], edit["range"]["end"]
        assert start["character"] == 0 and end["character"] == 0, edit
        lines[start["line"]:end["line"]] = edit["newText"].splitlines(keepends=True)
    return "".join(lines)
