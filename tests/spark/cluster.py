"""A Spark standalone cluster on this machine, started from the ``pyspark`` package's own
launcher (``bin/spark-class``; the pip package has no ``sbin/start-master.sh``): one
master and workers, each in its own JVM and its own process group, bound to 127.0.0.1 on
free ports, with small memory and one core per worker. Each worker starts one executor
JVM for the application, and the executor starts its own Python workers.

The daemons run with an environment stripped of ``PYTHONPATH`` and in a directory outside
the repository, and the executors' Python is :func:`executor_python`: an interpreter that
has the engine's packages (pyspark, pandas, pyarrow, protobuf, numpy) but not swag. So the
executors can only import swag from what the application ships, :func:`build_pyfiles`'s
zip, the way a cluster user ships it (``--py-files`` / ``addPyFile``).

:meth:`StandaloneCluster.stop` ends every process the cluster started, including the
executors' Python daemons (which put themselves in their own process groups): it is
registered with ``atexit`` too, for a test run that ends without the fixture's teardown,
and the daemons get SIGKILL when the test process dies (:func:`_die_with_parent`).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import json
import os
import shutil
import signal
import site
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.common import descendants, process_table
from tests.spark.conftest import worker_python

#: The packages an application using swag on Spark ships to its executors.
PACKAGES = ("swag_core", "adapters", "spark_adapter")
#: Heap of the master and worker daemons (they only keep track of workers and executors).
DAEMON_MEMORY = "256m"
#: What a worker offers to executors, and what one executor takes.
WORKER_MEMORY = "1g"
EXECUTOR_MEMORY = "512m"
#: Same reason as the tests' driver (``conftest.TEST_CONF``): short jobs, no C2 JIT.
JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: Upper bounds (s): a daemon up, or every worker registered with the master (three JVMs
#: starting on 2 busy cores); the processes ending after SIGTERM.
START_TIMEOUT = 120
STOP_TIMEOUT = 20


def free_ports(n: int) -> list[int]:
    """``n`` different TCP ports on 127.0.0.1 that nothing listens on now. All are bound
    before any is released: ports taken one at a time can repeat (the kernel may hand a
    just-released port out again), and a worker's web UI then takes the master's port, whose
    UI moves to the next one (a master ``/json`` that answers with the worker's HTML page)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [int(s.getsockname()[1]) for s in sockets]


def spark_home() -> Path:
    """The installed ``pyspark`` package: it holds ``bin/spark-class`` and ``jars/``."""
    import pyspark

    return Path(pyspark.__file__).parent


# ----------------------------------------------------------------------------- shipping
def build_pyfiles(repo: Path, dest: Path) -> Path:
    """A zip of swag's Python sources (:data:`PACKAGES`) for ``addPyFile`` /
    ``--py-files``. The compiled cross-key reader is left out: Python cannot import an
    extension module from a zip, so executors fed by a zip run the pure-Python reader."""
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as z:
        for package in PACKAGES:
            for path in sorted((repo / package).rglob("*.py")):
                z.write(path, path.relative_to(repo).as_posix())
    return dest


def executor_python(directory: Path) -> str:
    """An interpreter for the executors' Python workers without swag: a virtual environment
    (no pip) whose only addition is a ``.pth`` naming this interpreter's site-packages
    directories. A ``.pth`` line only adds a directory to ``sys.path``; the ``.pth`` files
    inside it (the editable install of swag) are not run, so swag is not importable there
    unless shipped. Wrapped by ``conftest.worker_python`` (no ``pyspark.zip``)."""
    venv = directory / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    engine = "\n".join(p for p in site.getsitepackages() if os.path.isdir(p))
    (venv / "lib" / version / "site-packages" / "engine.pth").write_text(engine + "\n",
                                                                        encoding="utf-8")
    return worker_python(directory, python=str(venv / "bin" / "python"))


# ----------------------------------------------------------------------------- the cluster
@dataclass
class StandaloneCluster:
    """A running master and its workers; :meth:`stop` ends them and removes ``root``."""

    root: Path
    master_url: str
    ui_url: str
    worker_dirs: list[Path]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def state(self) -> dict:
        """The master's status (its web UI's ``/json``: workers, applications, cores)."""
        with urllib.request.urlopen(f"{self.ui_url}/json", timeout=5) as r:
            return dict(json.load(r))

    def master_up(self) -> bool:
        """True once the master answers on its web UI with its JSON status (an HTML page
        there is not the master's status: retried until the start times out, with logs)."""
        try:
            self.state()
        except (OSError, ValueError):
            return False
        return True

    def alive_workers(self) -> int:
        """How many workers the master counts as alive (0 while it is not up)."""
        try:
            workers = self.state().get("workers", [])
        except (OSError, ValueError):
            return 0
        return sum(1 for w in workers if w.get("state") == "ALIVE")

    def wait_until(self, ready: Callable[[], bool], what: str) -> None:
        """Poll ``ready`` until true; raise (with the daemons' logs) when a daemon exits or
        after :data:`START_TIMEOUT` seconds."""
        deadline = time.monotonic() + START_TIMEOUT
        while not ready():
            ended = [p.args[1] for p in self.processes if p.poll() is not None]
            if ended or time.monotonic() > deadline:
                why = f"{ended} exited" if ended else f"not after {START_TIMEOUT} s"
                raise RuntimeError(f"Spark standalone cluster: waiting for {what}: {why}\n"
                                   f"{self.logs()}")
            time.sleep(0.25)

    def wait_for_workers(self) -> None:
        """Wait until every worker has registered with the master."""
        self.wait_until(lambda: self.alive_workers() == len(self.worker_dirs),
                        f"{len(self.worker_dirs)} workers to register")

    def logs(self, lines: int = 30) -> str:
        """The last lines of every daemon's log (for an error message)."""
        out = []
        for log in sorted(self.root.glob("*.log")):
            text = log.read_text(encoding="utf-8", errors="replace").splitlines()
            out.append(f"--- {log.name}\n" + "\n".join(text[-lines:]))
        return "\n".join(out)

    def stop(self) -> None:
        """SIGTERM to every daemon's process group and to every process below the daemons
        (executor JVMs, Python daemons in process groups of their own), SIGKILL to whatever
        is left after :data:`STOP_TIMEOUT`; then remove ``root``. Raises if a process
        outlives it all. Idempotent."""
        targets = self._tree()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in self.processes:
                if p.returncode is None:  # not reaped: the group id is still this one's
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(p.pid, sig)
            for pid, started in targets.items():
                if _started(pid) == started:  # the same process, not a reused pid
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, sig)
            deadline = time.monotonic() + STOP_TIMEOUT
            while time.monotonic() < deadline and _running(targets):
                time.sleep(0.2)
            if not _running(targets):
                break
        for p in self.processes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=1)
        self.processes.clear()
        shutil.rmtree(self.root, ignore_errors=True)
        left = _running(targets)
        if left:
            raise RuntimeError(f"Spark standalone cluster: processes {left} outlived SIGKILL")

    def _tree(self) -> dict[int, str]:
        """Every process from the daemons down, with its start time (``/proc``)."""
        table = process_table()
        pids = [p.pid for p in self.processes if p.returncode is None]
        tree = pids if table is None else [d for pid in pids
                                           for d in descendants(pid, table[0])]
        return {pid: started for pid in tree if (started := _started(pid)) is not None}


def _started(pid: int) -> str | None:
    """The start time of a running process (field 22 of ``/proc/<pid>/stat``), None when
    it has ended (a zombie, dead but not yet reaped, counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


def _running(targets: dict[int, str]) -> list[int]:
    return [pid for pid, started in targets.items() if _started(pid) == started]


def _daemon_env(root: Path) -> dict[str, str]:
    """The daemons' environment: no ``PYTHONPATH`` or ``PYSPARK_*`` from this process (the
    executors inherit it), Spark's home, configuration and scratch directories in ``root``."""
    env = {k: v for k, v in os.environ.items()
           if k != "PYTHONPATH" and not k.startswith(("PYSPARK_", "SPARK_"))}
    (root / "conf").mkdir()
    env.update(SPARK_HOME=str(spark_home()), SPARK_CONF_DIR=str(root / "conf"),
               SPARK_LOCAL_IP="127.0.0.1", SPARK_LOCAL_DIRS=str(root / "local"),
               SPARK_DAEMON_MEMORY=DAEMON_MEMORY, SPARK_DAEMON_JAVA_OPTS=JAVA_OPTIONS)
    return env


def _die_with_parent() -> None:
    """In the child before ``exec``: SIGKILL when the process that started it ends, even
    by SIGKILL, where no teardown or ``atexit`` runs (Linux ``PR_SET_PDEATHSIG``, kept
    across ``exec``). The executors and their Python workers then end on their own: they
    exit when they lose their worker, driver or parent JVM."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG


def _launch(cluster: StandaloneCluster, name: str, args: list[str],
            env: dict[str, str]) -> None:
    """One daemon JVM (``spark-class <main class> args``) in a new process group, its
    output in ``root/<name>.log``, its working directory ``root`` (not the repository)."""
    with open(cluster.root / f"{name}.log", "wb") as log:
        cluster.processes.append(subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args], stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cluster.root, env=env,
            start_new_session=True, preexec_fn=_die_with_parent))


@contextlib.contextmanager
def standalone_cluster(root: Path, workers: int = 2) -> Iterator[StandaloneCluster]:
    """Start a master and ``workers`` workers (1 core, :data:`WORKER_MEMORY` each) in
    ``root`` (created; removed at the end), wait until the master is up, yield the cluster,
    stop it at exit (also on an error, and at interpreter exit if the exit never comes).
    The workers may still be starting: an application can connect meanwhile (the master
    gives it executors as workers register), :meth:`StandaloneCluster.wait_for_workers`
    waits for them."""
    root.mkdir(parents=True)
    port, ui_port, *worker_ports = free_ports(2 + 2 * workers)
    cluster = StandaloneCluster(root, f"spark://127.0.0.1:{port}",
                                f"http://127.0.0.1:{ui_port}",
                                [root / f"worker{i}" for i in range(workers)])
    atexit.register(cluster.stop)
    try:
        env = _daemon_env(root)
        _launch(cluster, "master", ["org.apache.spark.deploy.master.Master", "--host",
                                    "127.0.0.1", "--port", str(port), "--webui-port",
                                    str(ui_port)], env)
        for i, work in enumerate(cluster.worker_dirs):
            _launch(cluster, f"worker{i}", [
                "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                "--port", str(worker_ports[2 * i]),
                "--webui-port", str(worker_ports[2 * i + 1]),
                "--cores", "1", "--memory", WORKER_MEMORY, "--work-dir", str(work),
                cluster.master_url], env)
        cluster.wait_until(cluster.master_up, "the master")
        yield cluster
    finally:
        cluster.stop()
        atexit.unregister(cluster.stop)
