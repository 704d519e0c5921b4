"""A student's sandbox: one process, under bubblewrap, that sees only what it needs.

What it sees: the system's libraries (``/usr``), the Python interpreter and the installed
packages (read-only), the key-free ``helpers`` (:mod:`tools.judge.keyfree`), the worker
(:mod:`tools.judge.worker`) and an empty ``/tmp`` of :data:`TMP_BYTES`. Not the book, its
solutions, the gradebook, the grades, another student's work or the network (a new network
namespace has none); no ``/proc`` (its mount table names the host's paths) and nothing of the
grader's environment (bubblewrap, the sandbox's first process, starts with none). It runs
as ``nobody`` in new user, process, IPC and UTS namespaces, and dies with the grader.

Limits, each enforced from outside the sandbox: :data:`SANDBOX_MEMORY_BYTES` for the whole
sandbox, every process and its tmpfs files together, by a ``memory`` cgroup where the machine
lets the grader make one (:func:`memory_cap`), and :data:`MEMORY_BYTES` of address space per
process; a read-only root, so that it writes only to ``/tmp`` (:data:`TMP_BYTES`) and
``/dev/shm`` (:data:`SHM_BYTES`); :data:`FILE_BYTES` per file it
writes; :data:`CPU_SECONDS` of processor time; :data:`MAX_PROCESSES` tasks where the
``pids`` cgroup can be written (:func:`process_cap`; without it, a fork bomb runs until the
time limit kills the sandbox's process namespace); each answer within a time limit set by the
grader, after which the sandbox is killed; answers at most :data:`tools.judge.wire.MAX_BYTES`
long. Anything the student prints goes to ``/dev/null``.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import select
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import uuid
from pathlib import Path

from tools.judge import wire

MEMORY_BYTES = 6 * 2**30
SANDBOX_MEMORY_BYTES = 2 * 2**30
FILE_BYTES = 16 * 2**20
TMP_BYTES = 64 * 2**20
SHM_BYTES = 16 * 2**20
CPU_SECONDS = 600
MAX_PROCESSES = 64
HERE = Path(__file__).resolve().parent
PIDS_ROOT = Path("/sys/fs/cgroup/pids")
MEMORY_ROOT = Path("/sys/fs/cgroup/memory")


class SandboxError(RuntimeError):
    """The sandbox could not answer: it died, ran out of time, or sent what is not data."""


def bubblewrap() -> str:
    """The ``bwrap`` program, or ``RuntimeError`` saying how to install it."""
    found = shutil.which("bwrap")
    if not found:
        raise RuntimeError("grading a class needs bubblewrap, the sandbox: install it "
                           "(Debian/Ubuntu: apt-get install bubblewrap)")
    return found


def _cgroup(root: Path, settings: dict[str, int]) -> Path | None:
    """A fresh cgroup under ``root`` (a cgroup v1 controller's folder) with ``settings`` written,
    or ``None`` where the machine does not let this user make one."""
    if not os.access(root, os.W_OK):
        return None
    group = root / f"course-judge-{uuid.uuid4().hex[:12]}"
    try:
        group.mkdir()
        for name, value in settings.items():
            (group / name).write_text(str(value))
    except OSError:
        _remove_group(group)
        return None
    return group


def memory_cap() -> Path | None:
    """A fresh ``memory`` cgroup that holds the whole sandbox (every process it starts, and what
    it writes to its tmpfs) to :data:`SANDBOX_MEMORY_BYTES`, or ``None`` where the machine does
    not let this user make one."""
    settings = {"memory.limit_in_bytes": SANDBOX_MEMORY_BYTES}
    if (MEMORY_ROOT / "memory.memsw.limit_in_bytes").exists():
        settings["memory.memsw.limit_in_bytes"] = SANDBOX_MEMORY_BYTES  # no escape into swap
    return _cgroup(MEMORY_ROOT, settings)


def out_of_memory(group: Path | None) -> bool:
    """Whether the memory cgroup ``group`` had to stop its sandbox (it reached its limit)."""
    if group is None:
        return False
    try:
        control = dict(line.split() for line in (group / "memory.oom_control").read_text().splitlines())
        return int(control.get("oom_kill", 0)) > 0 or int((group / "memory.failcnt").read_text()) > 0
    except (OSError, ValueError):
        return False


def process_cap() -> Path | None:
    """A fresh ``pids`` cgroup capped at :data:`MAX_PROCESSES`, or ``None`` where the machine
    does not let this user make one."""
    return _cgroup(PIDS_ROOT, {"pids.max": MAX_PROCESSES})


def _remove_group(group: Path, wait: float = 5.0) -> None:
    """Kill whatever is left in the cgroup ``group`` (the sandbox's processes die with its
    first one, but not at once) and remove it, so that grading leaves no group behind."""
    deadline = time.monotonic() + wait
    while True:
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            group.rmdir()
            return
        except OSError:  # a task not yet gone
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib64", "/lib32"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


def command(lib: Path, answer_fd: int) -> list[str]:
    """The ``bwrap`` command line that starts a worker importing the key-free ``helpers`` in
    ``lib`` and answering on file descriptor ``answer_fd``."""
    site = Path(sysconfig.get_paths()["purelib"])
    base = Path(sys.base_prefix).resolve()
    python = base / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    args = [bubblewrap(), "--unshare-all", "--unshare-user", "--uid", "65534", "--gid", "65534",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL", *_system_binds(),
            "--ro-bind", str(base), str(base), "--ro-bind", str(site), "/judge/site"]
    for pth in sorted(site.glob("__editable__*.pth")):  # editable installs point outside the sandbox
        args += ["--ro-bind", "/dev/null", f"/judge/site/{pth.name}"]
    args += ["--ro-bind", str(Path(lib).resolve()), "/judge/lib",
             "--ro-bind", str(HERE / "worker.py"), "/judge/bin/worker.py",
             "--ro-bind", str(HERE / "wire.py"), "/judge/bin/wire.py",
             "--dev", "/dev", "--size", str(SHM_BYTES), "--tmpfs", "/dev/shm",
             "--size", str(TMP_BYTES), "--tmpfs", "/tmp", "--remount-ro", "/", "--chdir", "/tmp",
             "--clearenv", "--setenv", "HOME", "/tmp", "--setenv", "MPLBACKEND", "Agg",
             "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "PYTHONHASHSEED", "0",
             str(python), "-I", "/judge/bin/worker.py", "/judge/lib", "/judge/site",
             str(answer_fd)]
    return args


class Sandbox:
    """One student's worker: :meth:`ask` sends a request and returns the answer as JSON data."""

    def __init__(self, lib: Path):
        self.group, self.memory = process_cap(), memory_cap()
        answers_r, answers_w = os.pipe()
        groups = [g for g in (self.group, self.memory) if g is not None]

        def limits():  # in the child, before bubblewrap starts
            for limit, value in ((resource.RLIMIT_AS, MEMORY_BYTES), (resource.RLIMIT_FSIZE, FILE_BYTES),
                                 (resource.RLIMIT_CPU, CPU_SECONDS), (resource.RLIMIT_CORE, 0)):
                resource.setrlimit(limit, (value, value))
            for group in groups:
                (group / "cgroup.procs").write_text(str(os.getpid()))

        # bubblewrap starts with an empty environment: its own process is the sandbox's init, and
        # a student who reads its environment (/proc/1/environ) must find nothing of the grader's
        self.process = subprocess.Popen(command(lib, answers_w), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, pass_fds=(answers_w,), env={},
                                        preexec_fn=limits, start_new_session=True)
        os.close(answers_w)
        self.answers = answers_r

    def ask(self, request: dict, timeout: float) -> dict:
        """Send ``request``; wait at most ``timeout`` seconds for the answer (then the sandbox
        is killed and :class:`SandboxError` says so)."""
        if self.process.poll() is not None:
            raise SandboxError("the sandbox had stopped")
        data = pickle.dumps(request)
        try:
            self.process.stdin.write(wire.HEADER.pack(len(data)) + data)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            self.close()
            raise SandboxError("the sandbox stopped (its code exited or crashed)") from None
        deadline = time.monotonic() + timeout
        head = self._read(wire.HEADER.size, deadline)
        (length,) = wire.HEADER.unpack(head)
        if length > wire.MAX_BYTES:
            self.close()
            raise SandboxError(f"the answer was longer than {wire.MAX_BYTES} bytes")
        body = self._read(length, deadline)
        try:
            return json.loads(body)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
            self.close()
            raise SandboxError("the answer was not data") from None

    def _read(self, n: int, deadline: float) -> bytes:
        chunks, left = [], n
        while left:
            wait = deadline - time.monotonic()
            ready = select.select([self.answers], [], [], max(wait, 0))[0] if wait > 0 else []
            if not ready:
                self.close()
                raise SandboxError("timeout")
            chunk = os.read(self.answers, min(left, 2**20))
            if not chunk:
                try:  # a sandbox stopped by its memory cap ends at once; one that only closed its answers is killed
                    self.process.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
                memory = out_of_memory(self.memory)
                self.close()
                if memory:
                    raise SandboxError(f"the sandbox ran out of memory (it may use {SANDBOX_MEMORY_BYTES // 2**20} MiB "
                                       "in all) and was stopped")
                raise SandboxError("the sandbox stopped (its code exited, crashed or ran out of memory)")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        """Kill the sandbox and everything it started."""
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
        for stream in (self.process.stdin,):
            try:
                stream.close()
            except OSError:
                pass
        if self.answers is not None:
            os.close(self.answers)
            self.answers = None
        for group in (self.group, self.memory):
            if group is not None:
                _remove_group(group)
        self.group = self.memory = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
