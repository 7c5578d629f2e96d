"""Start llama-cpp-python's OpenAI-compatible server on 127.0.0.1 for a while.

Used by the integration tests and the benchmark so that the ``openai`` backend is
exercised over real HTTP with a real model, and handy for trying the factory against
an HTTP endpoint without a GPU. The server binds to loopback only.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Iterator

from factory.errors import FactoryError


class LocalServerError(FactoryError):
    pass


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes] | None, timeout_s: float, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
            raise LocalServerError(f"the server exited with code {proc.returncode} before it was ready:\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            pass
        time.sleep(0.2)
    raise LocalServerError(f"{url} not ready after {timeout_s:.0f} s")


@contextlib.contextmanager
def llamacpp_server(
    model_path: str | os.PathLike[str],
    *,
    alias: str = "local",
    threads: int = 1,
    context_tokens: int = 8192,
    port: int | None = None,
    startup_timeout_s: float = 120.0,
) -> Iterator[str]:
    """Yield the base URL (``http://127.0.0.1:PORT/v1``) of a running server; stop it after."""
    port = port or free_port()
    base = f"http://127.0.0.1:{port}/v1"
    command = [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(model_path), "--model_alias", alias,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", str(threads), "--n_threads_batch", str(threads),
        "--n_ctx", str(context_tokens), "--verbose", "False",
    ]
    with tempfile.TemporaryDirectory(prefix="llamacpp-server-") as folder:
        log = Path(folder) / "server.log"
        with open(log, "wb") as handle:
            proc = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            wait_ready(f"{base}/models", proc, startup_timeout_s, log)
            yield base
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
