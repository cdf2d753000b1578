"""The corpus build on a real `dask.distributed` cluster (Beam's DaskRunner), against the DirectRunner's bytes.

The cluster is what a user starts: `dask scheduler` and `dask worker` processes on 127.0.0.1, each
its own process, joined through a scheduler file, with Dask's default settings. A worker is killed
in the middle of a build twice, each time on a cluster of its own: with those settings (the
scheduler reruns its tasks elsewhere) and with a scheduler that retries no task (`allowed_failures`
0, as a cluster that lost more workers than it retries), where the build fails and is rerun.
"""

import gzip
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from electra_tf.data.records import SHARD_PREFIX
from electra_tf.pipelines import build_pretraining_data as build_lib

from helpers import REPO, error_line, run_python
from pipeline_testdata import IN_MEMORY, SAMPLE_TEXT

pytestmark = pytest.mark.large  # slow tier: together these tests take minutes

SEQ_LENGTH = 64
NUM_SHARDS = 4
LINES_PER_FILE = 1500  # of each shared corpus file: about 0.8 MB of text, a few seconds to build
BUILD_HANG_GUARD = 300  # seconds: a hang guard only; a build takes seconds, with a lost worker's tasks rerun too


class Cluster:
    """A scheduler and workers on 127.0.0.1, each a `dask` process of its own; `client` watches them."""

    def __init__(self, root):
        from distributed import Client

        self.root, self.workers = root, []
        self.env = dict(os.environ, PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2")
        self.scheduler_file = root / "scheduler.json"
        self.scheduler = self._start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                     "--scheduler-file", self.scheduler_file)
        self.client = Client(scheduler_file=str(self.scheduler_file), timeout=300)  # waits for the file
        self.address = self.client.scheduler.address.removeprefix("tcp://")  # HOST:PORT

    def _start(self, *args):
        log = open(self.root / f"{args[0]}-{len(self.workers)}.log", "wb")
        return subprocess.Popen([sys.executable, "-m", "dask", *map(str, args)], cwd=REPO, env=self.env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def add_workers(self, count):
        """Starts `count` one-thread worker processes (no nanny: a killed worker stays dead); waits until they joined."""
        for _ in range(count):
            self.workers.append(self._start("worker", "--scheduler-file", self.scheduler_file, "--nworkers", "1",
                                            "--nthreads", "1", "--no-nanny", "--no-dashboard",
                                            "--local-directory", self.root / f"worker-{len(self.workers)}"))
        self.client.wait_for_workers(len(self.alive()), timeout=300)

    def alive(self):
        return [p for p in self.workers if p.poll() is None]

    def close(self):
        """Stops the workers, then the scheduler (a worker stopping while its scheduler does may hang)."""
        self.client.close()
        for group in (self.workers, [self.scheduler]):
            for process in group:
                if process.poll() is None:
                    process.terminate()
            for process in group:
                try:
                    process.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


def _started(root):
    """A cluster of two workers in `root`, closed when the fixture that started it ends."""
    pytest.importorskip("distributed")
    cluster = Cluster(root)
    try:
        cluster.add_workers(2)
        yield cluster
    finally:
        cluster.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from _started(tmp_path_factory.mktemp("dask"))


@pytest.fixture
def own_cluster(tmp_path_factory):
    """A cluster for one test that kills a worker: what a kill leaves behind never reaches another test."""
    yield from _started(tmp_path_factory.mktemp("dask"))


@pytest.fixture(scope="module")
def corpus(corpus_dir, tmp_path_factory):
    """The head of every shared corpus file (gzip, as the shared corpus): five files, five read tasks."""
    root = tmp_path_factory.mktemp("corpus")
    for name in sorted(os.listdir(corpus_dir)):
        with gzip.open(os.path.join(corpus_dir, name), "rt", encoding="utf-8") as f, \
                gzip.open(root / name, "wt", encoding="utf-8") as out:
            out.writelines(itertools.islice(f, LINES_PER_FILE))
    return f"text:{root}/*.txt.gz"


def _files(output_dir):
    """Every file of a build folder, by name (the hidden temp files included)."""
    return {name: (output_dir / name).read_bytes() for name in sorted(os.listdir(output_dir))}


@pytest.fixture(scope="module")
def reference(corpus, vocab_file, tmp_path_factory):
    """The files of the DirectRunner's build of `corpus` (in one process)."""
    output_dir = tmp_path_factory.mktemp("direct")
    build_lib.build_pretraining_data(corpus, vocab_file, str(output_dir), max_seq_length=SEQ_LENGTH,
                                     num_shards=NUM_SHARDS, pipeline_args=IN_MEMORY)
    files = _files(output_dir)
    assert len(files) == NUM_SHARDS + 2  # the shards, stats.json, _SUCCESS
    return files


def _dask_build(cluster, inputs, vocab_file, output_dir, wait=True):
    """The builder's CLI with `--runner DaskRunner --dask_client_address HOST:PORT`."""
    args = ["-m", "electra_tf.pipelines.build_pretraining_data", "--input", inputs, "--vocab_file", vocab_file,
            "--output_dir", str(output_dir), "--seq_length", str(SEQ_LENGTH), "--num_shards", str(NUM_SHARDS),
            "--runner", "DaskRunner", "--dask_client_address", cluster.address]
    if wait:
        return run_python(args, check=False, timeout=BUILD_HANG_GUARD)
    return subprocess.Popen([sys.executable, *args], cwd=REPO, env=dict(cluster.env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _executed(cluster):
    """Tasks run so far, per worker address."""
    return cluster.client.run(lambda dask_worker: dask_worker.state.executed_count)


@pytest.mark.large
def test_dask_build_is_byte_identical_to_the_direct_runner(cluster, corpus, reference, vocab_file, tmp_path):
    before = _executed(cluster)
    result = _dask_build(cluster, corpus, vocab_file, tmp_path / "dask")
    assert result.returncode == 0, result.stderr[-5000:]
    said = [line for line in result.stderr.splitlines() if "On the Dask cluster at " in line]
    assert len(said) == 1 and ": 2 workers now" in said[0], result.stderr[-5000:]
    assert _files(tmp_path / "dask") == reference  # every shard and stats.json, byte for byte
    assert json.loads(result.stdout)["examples"] == json.loads(reference["stats.json"])["examples"] > 1000
    after = _executed(cluster)
    assert len(after) == 2 and all(after[worker] > before.get(worker, 0) for worker in after), (before, after)  # both worked


def _kill_a_busy_worker_once_a_shard_is_written(cluster, build, output_dir):
    """Waits for a shard under its final name, freezes the workers, SIGKILLs one the scheduler says is running
    a task (so it dies mid-task), resumes the others; returns the killed pid (None: the build ended first)."""
    pids = cluster.client.run(os.getpid)  # worker address -> process id
    guard = time.monotonic() + BUILD_HANG_GUARD
    while build.poll() is None and time.monotonic() < guard:
        if os.path.isdir(output_dir) and any(n.startswith(SHARD_PREFIX) for n in os.listdir(output_dir)):
            busy = []
            for pid in pids.values():
                os.kill(pid, signal.SIGSTOP)
            try:
                busy = [pids[address] for address, keys in cluster.client.processing().items() if keys]
                if busy:
                    os.kill(busy[0], signal.SIGKILL)
            finally:
                for pid in pids.values():
                    if pid not in busy[:1]:
                        os.kill(pid, signal.SIGCONT)
            if busy:
                return busy[0]
        time.sleep(0.02)
    return None


def _wait_for_the_build(cluster, build):
    """The build's (stdout, stderr) once it ended. A build that hangs is stopped and the test fails with what the
    scheduler still had to do, its log and the build's."""

    def _unfinished_tasks(dask_scheduler):
        """Runs on the scheduler: the state of each task not yet computed or released, and its worker. Defined
        here, not at module level, so that it is pickled by value: the scheduler cannot import this test module."""
        return {str(key): (ts.state, ts.processing_on and ts.processing_on.address) for key, ts in
                dask_scheduler.tasks.items() if ts.state not in ("memory", "released", "forgotten")}

    try:
        return build.communicate(timeout=BUILD_HANG_GUARD)
    except subprocess.TimeoutExpired:
        build.kill()
        _, stderr = build.communicate()
        scheduler_log = (cluster.root / "scheduler-0.log").read_text(errors="replace")
        raise AssertionError(
            f"the build did not end within {BUILD_HANG_GUARD} s. The scheduler's unfinished tasks: "
            f"{cluster.client.run_on_scheduler(_unfinished_tasks)}\nIts log:\n{scheduler_log[-5000:]}\n"
            f"The build's log:\n{stderr[-5000:]}") from None
    finally:
        if build.poll() is None:
            build.kill()
            build.wait()


@pytest.mark.large
def test_a_worker_killed_mid_build_has_its_tasks_rerun_and_the_build_completes(own_cluster, corpus, reference,
                                                                             vocab_file, tmp_path):
    cluster, out = own_cluster, tmp_path / "dask"
    build = _dask_build(cluster, corpus, vocab_file, out, wait=False)
    killed = _kill_a_busy_worker_once_a_shard_is_written(cluster, build, out)
    stdout, stderr = _wait_for_the_build(cluster, build)
    assert killed is not None, f"the build ended before a worker was caught running a task:\n{stderr[-3000:]}"

    assert build.returncode == 0, stderr[-5000:]
    assert json.loads(stdout)["examples"] > 1000
    assert _files(out) == reference  # byte for byte, and no temp or count file of the killed task left


@pytest.fixture
def no_retries(own_cluster):
    """A cluster whose scheduler fails a task at its worker's first death (Dask's default: after the third)."""
    own_cluster.client.run_on_scheduler(lambda dask_scheduler: setattr(dask_scheduler, "allowed_failures", 0))
    return own_cluster


@pytest.mark.large
def test_a_worker_killed_mid_build_fails_it_incomplete_and_the_rerun_completes(no_retries, corpus, reference,
                                                                             vocab_file, tmp_path):
    cluster, out = no_retries, tmp_path / "dask"
    build = _dask_build(cluster, corpus, vocab_file, out, wait=False)
    killed = _kill_a_busy_worker_once_a_shard_is_written(cluster, build, out)
    stdout, stderr = _wait_for_the_build(cluster, build)
    assert killed is not None, f"the build ended before a worker was caught running a task:\n{stderr[-3000:]}"

    assert build.returncode == 1, stderr[-5000:]
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: The build in {out} stopped incomplete (no _SUCCESS): ") and "died" in last, last
    assert "Rerun the same command" in last and not stdout
    left = _files(out)
    assert "_SUCCESS" not in left and "stats.json" not in left
    assert any(name.startswith(SHARD_PREFIX) for name in left)
    for name, data in left.items():  # beside hidden temp and count files, only whole shards
        assert name.startswith(".") or data == reference[name], name

    cluster.add_workers(1)  # the lost worker's replacement
    rerun = _dask_build(cluster, corpus, vocab_file, out)
    assert rerun.returncode == 0, rerun.stderr[-5000:]
    assert _files(out) == reference  # complete, byte for byte, and no temp file left


# --- Bad input ----------------------------------------------------------------------------------


HANG_GUARD = 300  # seconds: a hang guard only; a refused build ends within its connection timeout


def _build_against(tmp_path, vocab_file, *dask_flags):
    """The builder's CLI on a small corpus into `tmp_path/out` (not made beforehand) with `--runner DaskRunner`."""
    (tmp_path / "corpus.txt").write_text(SAMPLE_TEXT, encoding="utf-8")
    return run_python(["-m", "electra_tf.pipelines.build_pretraining_data", "--input", str(tmp_path / "corpus.txt"),
                       "--vocab_file", vocab_file, "--output_dir", str(tmp_path / "out"), "--runner", "DaskRunner",
                       *dask_flags], check=False, timeout=HANG_GUARD)


def test_a_scheduler_that_does_not_answer_is_one_line_naming_the_flag(vocab_file, tmp_path):
    pytest.importorskip("distributed")
    result = _build_against(tmp_path, vocab_file, "--dask_client_address", "127.0.0.1:1",
                            "--dask_connection_timeout", "2")
    line = error_line(result, 1)
    assert line.startswith("error: No Dask scheduler answered at `--dask_client_address=127.0.0.1:1`: "), line
    assert not os.path.exists(tmp_path / "out")


class _Http:
    """A plain HTTP server on 127.0.0.1 (a thread of the test); `connections` counts who connected."""

    def __init__(self):
        import http.server
        import threading

        counter = self.connections = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def setup(self):
                counter.append(self.client_address)
                super().setup()

            def log_message(self, *args):  # quiet
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def http_server():
    server = _Http()
    yield server
    server.close()


def test_an_address_where_another_server_listens_ends_within_the_timeout_naming_the_flag(vocab_file, tmp_path,
                                                                                        http_server):
    """Dask's client waits for the handshake of an HTTP server with no limit; the build ends, one line, no folder."""
    pytest.importorskip("distributed")
    result = _build_against(tmp_path, vocab_file, "--dask_client_address", http_server.address,
                            "--dask_connection_timeout", "5")
    line = error_line(result, 1)
    assert line.startswith(f"error: No Dask scheduler answered at `--dask_client_address={http_server.address}` "
                           "within 5 s (--dask_connection_timeout)"), line
    assert http_server.connections, "the build never reached the HTTP server"
    assert not os.path.exists(tmp_path / "out")  # no empty output folder left


def test_a_scheduler_file_that_does_not_exist_ends_within_the_timeout_naming_the_flag(vocab_file, tmp_path):
    """Dask's client waits for the file with no limit; the build waits the connection timeout, then one line."""
    pytest.importorskip("distributed")
    missing = tmp_path / "scheduler.json"
    result = _build_against(tmp_path, vocab_file, "--dask_scheduler_file", str(missing),
                            "--dask_connection_timeout", "3")
    line = error_line(result, 1)
    assert line.startswith(f"error: No Dask scheduler at `--dask_scheduler_file={missing}`: no such file after "
                           "waiting 3 s (--dask_connection_timeout)."), line
    assert not os.path.exists(tmp_path / "out") and not os.path.exists(missing)


def test_a_scheduler_file_naming_another_server_ends_within_the_timeout_naming_the_flag(vocab_file, tmp_path,
                                                                                       http_server):
    pytest.importorskip("distributed")
    scheduler_file = tmp_path / "scheduler.json"
    scheduler_file.write_text(json.dumps({"type": "Scheduler", "address": f"tcp://{http_server.address}"}))
    result = _build_against(tmp_path, vocab_file, "--dask_scheduler_file", str(scheduler_file),
                            "--dask_connection_timeout", "3")
    line = error_line(result, 1)
    assert line.startswith(f"error: No Dask scheduler answered at `--dask_scheduler_file={scheduler_file}` "
                           f"(tcp://{http_server.address}) within 3 s"), line
    assert http_server.connections and not os.path.exists(tmp_path / "out")


@pytest.mark.parametrize("flags, named", [
    (["--dask_connection_timeout=-1"], "`--dask_connection_timeout` must be a whole number of seconds >= 1. "
                                       "Received: `--dask_connection_timeout=-1`"),
    (["--dask_connection_timeout=soon"], "`--dask_connection_timeout` must be a whole number of seconds >= 1. "
                                         "Received: `--dask_connection_timeout=soon`"),
    (["--dask_client_address", "not-a-host:xyz"], "`--dask_client_address` must be HOST:PORT"),
    (["--dask_npartitions=-2"], "`--dask_npartitions` must be a whole number >= 1. Received: `--dask_npartitions=-2`"),
    (["--dask_partition_size", "-1"], "`--dask_partition_size` must be a whole number >= 1. "
                                      "Received: `--dask_partition_size=-1`"),
    (["--dask_npartitions=4", "--dask_partition_size=2"], "`--dask_npartitions` (how many partitions) and "
                                                         "`--dask_partition_size` (how many elements in each) both "
                                                         "set the partitioning: give one."),
])
def test_a_malformed_dask_flag_is_one_line_naming_it_exit_2(vocab_file, tmp_path, flags, named):
    """Refused as a bad flag before anything runs (a port nobody listens on is the scheduler, where none is named)."""
    pytest.importorskip("distributed")
    address = [] if any(f.startswith("--dask_client_address") for f in flags) else \
        ["--dask_client_address", "127.0.0.1:1"]
    result = _build_against(tmp_path, vocab_file, *address, *flags)
    line = error_line(result, 2)
    assert line.startswith(f"error: {named}"), line
    value = flags[-1].partition("=")[2] or flags[-1]
    assert value in line, line  # the value received
    assert not os.path.exists(tmp_path / "out")


def test_the_dask_runner_without_distributed_names_what_to_install(monkeypatch):
    from electra_tf import cli
    from electra_tf.pipelines import runners

    monkeypatch.setitem(sys.modules, "dask.distributed", None)  # `import dask.distributed` fails
    with pytest.raises(ModuleNotFoundError) as info:
        runners.runner(runners.pipeline_options(["--runner", "DaskRunner"]))
    assert cli.missing_module(info.value).startswith("`--runner DaskRunner` needs Dask's scheduler client (")
    assert cli.missing_module(info.value).endswith("install it with `pip install distributed` (or `pip install -e .`).")


def test_a_given_dask_partitioning_is_kept():
    from electra_tf.pipelines import runners

    assert runners.merge_pipeline_args(["--runner=DaskRunner", "--dask_npartitions=8"]) == \
        ["--runner=DaskRunner", "--dask_npartitions=8"]
    assert runners.merge_pipeline_args(["--runner", "DaskRunner"]) == \
        ["--dask_partition_size=1", "--runner", "DaskRunner"]


@pytest.fixture
def local_client():
    """A client of an in-process Dask cluster: one worker, one thread."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        yield client


def _fail(message):
    raise ValueError(message)


def test_the_wait_for_a_dask_build_raises_a_tasks_error_and_leaves_no_result_on_the_cluster(local_client):
    from electra_tf.pipelines import runners

    done = local_client.submit(sum, [1, 2], key="done")
    runners._wait_for_dask([done], local_client)  # pylint: disable=protected-access
    held = lambda dask_scheduler: "done" in dask_scheduler.tasks  # noqa: E731
    guard = time.monotonic() + 60  # a hang guard: the release reaches the scheduler in milliseconds
    while local_client.run_on_scheduler(held) and time.monotonic() < guard:
        time.sleep(0.01)
    assert not local_client.run_on_scheduler(held)  # released: a worker lost now has nothing to compute again

    with pytest.raises(ValueError, match="^a task failed$"):
        failing = local_client.submit(_fail, "a task failed")
        runners._wait_for_dask([failing], local_client)  # pylint: disable=protected-access


_PROGRESS_LOGGED = threading.Event()


def _run_until_the_progress_is_logged():
    return _PROGRESS_LOGGED.wait(120)  # a hang guard only


def test_the_wait_for_a_dask_build_logs_the_tasks_running(local_client, monkeypatch):
    """A task runs until the wait has logged it: the log line, not a clock, ends it."""
    from electra_tf.pipelines import runners

    seen = []

    def info(message, *args):  # absl's `logging.info`, whatever the process's logging settings
        if "tasks running" in message % args:
            seen.append(message % args)
            _PROGRESS_LOGGED.set()

    _PROGRESS_LOGGED.clear()
    monkeypatch.setattr(runners, "_PROGRESS_SECONDS", 0.05)
    monkeypatch.setattr(runners.logging, "info", info)
    task = local_client.submit(_run_until_the_progress_is_logged, pure=False)
    runners._wait_for_dask([task], local_client)  # pylint: disable=protected-access
    assert seen and seen[0].endswith(": 1 tasks running on 1 workers"), seen


def test_the_cluster_line_counts_the_workers_while_the_clients_cache_is_refreshed():
    """The client refreshes its cached `scheduler_info()` without workers every 1 ms here (2 s by default):
    a count read from that cache says 0 workers about one time in six; the line asks the scheduler."""
    distributed = pytest.importorskip("distributed")
    import dask

    from electra_tf.pipelines import runners

    with dask.config.set({"distributed.client.scheduler-info-interval": "1ms"}), \
            distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as lc, \
            distributed.Client(lc) as client:
        lines = {runners._cluster_line(client)[1].split(" (progress: ")[0] for _ in range(200)}  # pylint: disable=protected-access
    assert lines == {f"On the Dask cluster at {lc.scheduler_address}: 2 workers now"}


def test_the_cluster_line_names_the_dashboard_only_where_its_page_answers():
    """A scheduler without bokeh lists a "dashboard" service whose link gives 404; the line leaves it out."""
    import http.server
    import threading
    import types

    from electra_tf.pipelines import runners

    class Pages(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # pylint: disable=invalid-name
            self.send_response(200 if self.path == "/status" else 404)
            self.end_headers()

        def log_message(self, *args):
            pass

    def line(link, services=("dashboard",)):
        client = types.SimpleNamespace(nthreads=lambda: {"w1": 1}, dashboard_link=link,
                                       scheduler_info=lambda: {"services": {s: 1 for s in services}},
                                       scheduler=types.SimpleNamespace(address="tcp://10.0.0.1:8786"))
        return runners._cluster_line(client)[1]  # pylint: disable=protected-access

    head = "On the Dask cluster at tcp://10.0.0.1:8786: 1 workers now"
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    root = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert line(f"{root}/status") == f"{head} (progress: {root}/status)"
        assert line(f"{root}/missing") == head  # 404
        assert line(f"{root}/status", services=()) == head  # no dashboard service listed
    finally:
        server.shutdown()
        server.server_close()
    assert line(f"{root}/status") == head  # nothing listens there now
