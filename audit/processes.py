"""A pure module run as a Python process of its own beside this one (``python -m
module``), spoken to through two pipes: pickled messages in on its standard input, out
on its standard output. Used by a release's tables (audit.releases.bundle_tables) and an
import's planning (audit.archive.planning). Pure: no Django."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from multiprocessing.connection import Connection
from pathlib import Path

#: The folder that holds the ``audit`` package, wherever this process was started from.
ROOT = str(Path(__file__).resolve().parents[1])


def module_process(
    module: str, env: Mapping[str, str] | None = None
) -> tuple[subprocess.Popen, Connection, Connection]:
    """Start ``python -m module`` (with ``env`` added to this environment); return the
    process, the connection that writes to it and the one that reads its answers."""
    environ = {**os.environ, **(env or {})}
    environ["PYTHONPATH"] = os.pathsep.join(filter(None, (ROOT, environ.get("PYTHONPATH"))))
    process = subprocess.Popen(
        [sys.executable, "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=environ,
    )
    if process.stdin is None or process.stdout is None:  # pipes were asked for
        raise OSError(f"the process of {module} has no pipes")
    connection = Connection(os.dup(process.stdin.fileno()), readable=False)
    answers = Connection(os.dup(process.stdout.fileno()), writable=False)
    process.stdin.close()
    process.stdout.close()
    return process, connection, answers


def served_pipes() -> tuple[Connection, Connection]:
    """In the started process: the connection it reads from (standard input) and the one
    it answers on (standard output, which nothing else may write to: anything printed
    goes to standard error from here on)."""
    connection = Connection(os.dup(0), writable=False)
    answers = Connection(os.dup(1), readable=False)
    os.dup2(2, 1)
    return connection, answers


def ended(process: subprocess.Popen, timeout: float) -> int:
    """Wait up to ``timeout`` seconds for ``process`` to end (its pipes closed, it ends at
    the end of its input), then kill it; its exit status."""
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait()
