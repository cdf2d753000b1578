"""The Beam runner a corpus build runs on: this machine's cores (DirectRunner) or a Dask cluster.

`pipeline_options` completes the user's Beam options with the defaults,
`runner` picks the runner object, `run` runs a pipeline to the end.

- DirectRunner (the default): multi-processing, one worker process per core
  (`--direct_running_mode=in_memory` for one process). Its FnApiRunner backend
  is used directly, which keeps builds offline (see `runner`).
- DaskRunner (`--runner DaskRunner --dask_client_address HOST:PORT`, or
  `--dask_scheduler_file FILE`; without either, a local cluster of its own):
  Beam's runner on a `dask.distributed` scheduler and its workers, here or on
  other machines. Requires `pip install 'electra_tf[dask]'` where the build is
  submitted and on every worker.
- Any other runner (Dataflow, Flink, Spark, ...) is passed to Beam as named.

What Beam's DaskRunner (2.77) lacks for the corpus build, and how the build
does without it (the runner itself is used as released):

- Beam resolves it only by its module path: `runner` takes the short name.
- It drops `Reshuffle`, so the partitions of `Create` are all the parallelism
  the workers get: `pipeline_options` sets `--dask_partition_size=1` (one
  partition, so one read task, per input file) unless `--dask_partition_size`
  or `--dask_npartitions` is given. The shuffle keeps the number of
  partitions, so the shards are written by as many tasks (plus one).
- It merges a ParDo's tagged outputs into its main output, reads a side input
  by computing its bag again inside each task, and computes only the graph of
  the last transform the pipeline applied. The build's ParDos have one output
  each, it uses no side input, and it ends in one sink downstream of all its
  work (`build_pretraining_data._pipeline`).
- Its GroupByKey is `dask.bag`'s task shuffle, all partitions to all
  partitions, whatever the number of keys: a global combine of the counts
  (`CombineGlobally`, whose default value is also a side input) cost a second
  shuffle of that size. Each shard's task writes its counts beside it instead,
  and the build sums those files.
- It calls a DoFn's `setup` once per bundle (a Dask partition), not once per
  worker: the tokenizer is cached per process.
- Its ParDo collects the outputs in a list that is part of the task graph:
  tasks that share one copy of the graph (an in-process cluster,
  `processes=False`) add to one list and repeat each other's outputs. Worker
  processes get a copy per task. The build checks
  that no example is written twice and that the shards hold every example
  packed, and fails loudly otherwise.
- A task whose workers died more often than the scheduler retries it
  (`distributed.scheduler.allowed-failures`, default 3) fails the run with
  `KilledWorker`: `run` turns that into `WorkersLostError`, one line.
- It leaves its scheduler connection open: `run` closes it.
- It waits by fetching the last transform's value (the build's sink returns
  none) into the submitting process, and keeps it on a worker until the end: a
  worker lost before the fetch makes the client retry it until the scheduler
  has computed the value again, and a worker lost after it makes the scheduler
  compute the finished work again. `run` waits for the computation without
  fetching anything, releases the value once computed, and logs the tasks
  running every 30 s.
- It reads its flags without a check: `--dask_connection_timeout soon` (or
  `2.5`) falls back to Dask's default silently, a negative one or a partition
  count fails deep in Dask, both partition flags print Beam's whole usage.
  `check_pipeline_args` refuses such a flag first, in one line
  (`BadPipelineFlag`).
- Its client waits with no limit for a `--dask_scheduler_file` that does not
  exist, and for the handshake of whatever server listens at the address (an
  HTTP server never answers it), whatever `--dask_connection_timeout` says.
  `check_scheduler` waits for the file and talks to the scheduler itself,
  within that timeout (default: Dask's `distributed.comm.timeouts.connect`,
  30 s), before the build writes anything.

Dask's worker processes, as a nanny starts them, run with
`MALLOC_TRIM_THRESHOLD_=65536` (`distributed.nanny.pre-spawn-environ`): glibc
then maps every large buffer afresh and gives it back at once, and tokenizing
costs 1.6x the CPU time. `undo_worker_malloc_trim` sets the thresholds glibc
would settle on by itself; the build's steps call it in their `setup`.
"""

import argparse
import asyncio
import ctypes
import functools
import json
import os
import time

from absl import logging
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.options.pipeline_options import StandardOptions

DASK_RUNNER = "DaskRunner"
_DASK_PARTITION_FLAGS = ("--dask_npartitions", "--dask_partition_size")


# glibc's mallopt parameters, and the values its dynamic thresholds reach for large buffers (64-bit).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_MAX = 32 << 20
_TRIM_THRESHOLD = 2 * _MMAP_THRESHOLD_MAX


@functools.lru_cache(maxsize=None)
def undo_worker_malloc_trim():
    """In a process started with `MALLOC_TRIM_THRESHOLD_` (a Dask nanny's worker), glibc's large-buffer thresholds.

    That variable turns off glibc's adaptive thresholds, so each large buffer
    (a batch's text, its token ids) is mapped from the kernel and unmapped
    again; with the thresholds the adaptation reaches, they are reused. Once
    per process; nothing where the variable is unset or the C library is not
    glibc. Returns True when it set them.

    Example:
        >>> from electra_tf.pipelines.runners import undo_worker_malloc_trim
        >>> undo_worker_malloc_trim() in (True, False)
        True
    """
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_MAX)
                    and libc.mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD))
    except (OSError, AttributeError):  # not glibc
        return False


class WorkersLostError(ConnectionError):
    """A cluster lost the workers that ran a task more often than it retries one."""


class BadPipelineFlag(ValueError):
    """A Beam flag the runner would misread: malformed, out of range, or contradicting another (a usage error)."""


def default_pipeline_args():
    """DirectRunner, multi-processing on every core.

    Example:
        >>> from electra_tf.pipelines.runners import default_pipeline_args
        >>> default_pipeline_args()[:2]
        ['--runner=DirectRunner', '--direct_running_mode=multi_processing']
    """
    return [
        "--runner=DirectRunner",
        "--direct_running_mode=multi_processing",
        f"--direct_num_workers={os.cpu_count() or 1}",
    ]


def merge_pipeline_args(pipeline_args):
    """User Beam options, completed with `default_pipeline_args()` where they say nothing.

    A non-Direct runner, or `direct_running_mode=in_memory` (one process), drops
    the multi-processing defaults. The DaskRunner gets `--dask_partition_size=1`
    unless a partitioning is given (see the module docstring).

    Args:
        pipeline_args: list of str or None. Beam options as given on a command line.

    Returns:
        list of str.

    Example:
        >>> from electra_tf.pipelines.runners import merge_pipeline_args
        >>> merge_pipeline_args(["--runner", "DaskRunner", "--dask_client_address", "10.0.0.5:8786"])[0]
        '--dask_partition_size=1'
        >>> merge_pipeline_args(["--direct_running_mode=in_memory"])[-2:]
        ['--direct_num_workers=1', '--direct_running_mode=in_memory']
    """
    user = list(pipeline_args or [])
    joined = " ".join(user)
    names = {a.split("=")[0] for a in user if a.startswith("--")}
    if DASK_RUNNER in joined:
        return user if names & set(_DASK_PARTITION_FLAGS) else ["--dask_partition_size=1", *user]
    if "--runner" in joined and "DirectRunner" not in joined:
        return user
    defaults = default_pipeline_args()
    if "in_memory" in joined:
        defaults[-1] = "--direct_num_workers=1"
    return [d for d in defaults if d.split("=")[0] not in names] + user


def pipeline_options(pipeline_args):
    """`PipelineOptions` of `merge_pipeline_args(pipeline_args)`.

    Args:
        pipeline_args: list of str or None. Beam options as given on a command line.

    Example:
        >>> from electra_tf.pipelines.runners import is_dask, pipeline_options
        >>> is_dask(pipeline_options(["--runner=DaskRunner"])), is_dask(pipeline_options(None))
        (True, False)
    """
    return PipelineOptions(merge_pipeline_args(pipeline_args))


def is_dask(options):
    """True when `options` (`PipelineOptions`) name the DaskRunner, by its short name or module path."""
    name = options.view_as(StandardOptions).runner
    return bool(name) and name.split(".")[-1] == DASK_RUNNER


def _require_distributed(options):
    """`ModuleNotFoundError` saying what the DaskRunner needs, where `dask.distributed` is not installed."""
    try:
        import dask.distributed  # pylint: disable=import-outside-toplevel,unused-import
    except ImportError as e:
        raise ModuleNotFoundError(f"`--runner {options.view_as(StandardOptions).runner}` needs Dask's scheduler "
                                  f"client ({e})", name="distributed") from e


# The DaskRunner's flags (`DaskOptions`) and the keys Beam stores them under.
_DASK_FLAGS = {"--dask_client_address": "address", "--dask_scheduler_file": "scheduler_file",
               "--dask_connection_timeout": "timeout", "--dask_npartitions": "npartitions",
               "--dask_partition_size": "partition_size"}
_HOST_PORT_SCHEMES = ("tcp", "tls", "ws", "wss")
_ANSWER_MARGIN = 2  # seconds past the connection timeout for a scheduler's answer (see `check_scheduler`)


class _FlagParser(argparse.ArgumentParser):
    def error(self, message):
        raise BadPipelineFlag(message)


def _dask_flags(pipeline_args):
    """The Dask flags of `pipeline_args` as written (str or None), by Beam's key; read as Beam reads them."""
    parser = _FlagParser(allow_abbrev=False, add_help=False)
    for flag, key in _DASK_FLAGS.items():
        parser.add_argument(flag, dest=key, type=str, default=None)
    return vars(parser.parse_known_args(list(pipeline_args or []))[0])


def _whole_number(values, key, lowest, unit=""):
    """`values[key]` as an int >= `lowest` (None where not given), or `BadPipelineFlag` naming the flag."""
    text = values[key]
    if text is None:
        return None
    flag = next(f for f, k in _DASK_FLAGS.items() if k == key)
    try:
        number = int(text)  # as Beam reads it: a fraction or a unit is no number to it
    except ValueError:
        number = None
    if number is None or number < lowest:
        raise BadPipelineFlag(f"`{flag}` must be a whole number{unit} >= {lowest}. Received: `{flag}={text}`")
    return number


def _check_address(address):
    """Refuses a `--dask_client_address` Dask cannot parse (`HOST:PORT`, or `SCHEME://HOST:PORT`)."""
    from distributed.comm import addressing  # pylint: disable=import-outside-toplevel
    from distributed.comm import registry  # pylint: disable=import-outside-toplevel

    shape = (f"`--dask_client_address` must be HOST:PORT (a port 1-65535; `tcp://HOST:PORT` too), "
             f"as `dask scheduler` prints it. Received: `--dask_client_address={address}`")
    try:
        scheme, location = addressing.parse_address(address.strip())
    except ValueError:
        raise BadPipelineFlag(shape) from None
    if scheme not in registry.backends:
        raise BadPipelineFlag(f"`--dask_client_address` has an unknown scheme `{scheme}://` (Dask's: "
                              f"{', '.join(sorted(registry.backends))}). Received: `--dask_client_address={address}`")
    if scheme in _HOST_PORT_SCHEMES:
        try:
            host, port = addressing.parse_host_port(location)
        except ValueError:
            raise BadPipelineFlag(shape) from None
        if not host or not 1 <= port <= 65535:
            raise BadPipelineFlag(shape)


def check_pipeline_args(pipeline_args):
    """Refuses, before any work, a Dask flag the DaskRunner would misread or fail on deep inside.

    Only when the runner is the DaskRunner (others ignore the Dask flags).
    `--dask_connection_timeout`: a whole number of seconds >= 1 (Beam reads
    nothing else); `--dask_npartitions`, `--dask_partition_size`: integers >= 1,
    one of them; `--dask_client_address`: an address Dask parses, and not
    together with `--dask_scheduler_file`; neither empty.

    Args:
        pipeline_args: list of str or None. Beam options as given on a command line.

    Raises:
        BadPipelineFlag: one line naming the flag and the value received.

    Example:
        >>> from electra_tf.pipelines.runners import BadPipelineFlag, check_pipeline_args
        >>> try:
        ...     check_pipeline_args(["--runner", "DaskRunner", "--dask_npartitions=0"])
        ... except BadPipelineFlag as e:
        ...     print(e)
        `--dask_npartitions` must be a whole number >= 1. Received: `--dask_npartitions=0`
    """
    options = PipelineOptions(list(pipeline_args or []))
    if not is_dask(options):
        return
    _require_distributed(options)
    values = _dask_flags(pipeline_args)
    _whole_number(values, "timeout", 1, " of seconds")
    partitions = [f"`{flag}={values[key]}`" for flag, key in _DASK_FLAGS.items()
                  if key in ("npartitions", "partition_size") and values[key] is not None]
    if len(partitions) > 1:
        raise BadPipelineFlag("`--dask_npartitions` (how many partitions) and `--dask_partition_size` (how many "
                              "elements in each) both set the partitioning: give one. "
                              f"Received: {', '.join(partitions)}")
    _whole_number(values, "npartitions", 1)
    _whole_number(values, "partition_size", 1)
    for flag, key in (("--dask_client_address", "address"), ("--dask_scheduler_file", "scheduler_file")):
        if values[key] is not None and not values[key].strip():
            raise BadPipelineFlag(f"`{flag}` is empty: name the scheduler, or leave the flag out for a local cluster.")
    if values["address"] is not None and values["scheduler_file"] is not None:
        raise BadPipelineFlag("`--dask_client_address` and `--dask_scheduler_file` both name the scheduler: give "
                              f"one. Received: `--dask_client_address={values['address']}`, "
                              f"`--dask_scheduler_file={values['scheduler_file']}`")
    if values["address"] is not None:
        _check_address(values["address"])


def _connection_timeout(values):
    """Seconds to reach the scheduler: `--dask_connection_timeout`, else Dask's own connect timeout."""
    if values["timeout"] is not None:
        return int(values["timeout"])
    import dask  # pylint: disable=import-outside-toplevel
    from dask.utils import parse_timedelta  # pylint: disable=import-outside-toplevel

    return parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s")


def _read_scheduler_file(path, deadline, timeout):
    """The address in `dask scheduler`'s `--scheduler-file`, waiting until `deadline` for it to be written."""
    flag = f"`--dask_scheduler_file={path}`"
    problem = None
    while True:
        try:
            with open(path, encoding="utf-8") as f:
                address = json.load(f)["address"]
            if isinstance(address, str) and address:
                return address
            problem = "its `address` is no address"
        except FileNotFoundError:
            problem = "no such file"
        except IsADirectoryError:
            raise ConnectionError(f"{flag} is a folder: name the file `dask scheduler --scheduler-file` "
                                  "writes.") from None
        except (ValueError, KeyError, TypeError) as e:  # being written, or not a scheduler file
            problem = f"not a Dask scheduler file ({type(e).__name__}: {e})"
        except OSError as e:
            raise ConnectionError(f"{flag} cannot be read: {e.strerror or e}") from None
        if time.monotonic() >= deadline:
            raise ConnectionError(f"No Dask scheduler at {flag}: {problem} after waiting {timeout:g} s "
                                  f"(--dask_connection_timeout). Start `dask scheduler --scheduler-file {path}` "
                                  "first, or name the file it wrote.")
        time.sleep(0.05)


async def _identity(address, timeout):
    """What the server at `address` says it is (Dask's `identity` call), after Dask's handshake."""
    from distributed.comm import connect  # pylint: disable=import-outside-toplevel

    comm = await connect(address, timeout=timeout)
    try:
        await comm.write({"op": "identity", "reply": True})
        return await comm.read()
    finally:
        comm.abort()


def check_scheduler(pipeline_args):
    """Reaches the Dask scheduler the flags name within the connection timeout, or one-line `ConnectionError`.

    Dask's client waits with no limit for a scheduler file that does not exist
    and for the handshake of a server that is no Dask scheduler (an HTTP
    server): here the file is waited for, then the scheduler asked what it is,
    all within `--dask_connection_timeout` seconds (default Dask's
    `distributed.comm.timeouts.connect`). Nothing for other runners or a
    DaskRunner without an address (its own local cluster). Call
    `check_pipeline_args` first.

    Args:
        pipeline_args: list of str or None. Beam options as given on a command line.

    Raises:
        ConnectionError: no file, no answer, or an answer that is not a Dask scheduler's; names the flag.
    """
    if not is_dask(PipelineOptions(list(pipeline_args or []))):
        return
    values = _dask_flags(pipeline_args)
    if values["address"] is None and values["scheduler_file"] is None:
        return
    timeout = _connection_timeout(values)
    deadline = time.monotonic() + timeout
    address = values["address"]
    target = f"`--dask_client_address={address}`"
    if address is None:
        address = _read_scheduler_file(values["scheduler_file"], deadline, timeout)
        target = f"`--dask_scheduler_file={values['scheduler_file']}` ({address})"
    left = max(round(deadline - time.monotonic(), 1), 0.1)
    try:  # Dask's `connect` gives up on a refused port at `left`; the margin keeps that its error, not ours
        identity = asyncio.run(asyncio.wait_for(_identity(address.strip(), left), left + _ANSWER_MARGIN))
    except asyncio.TimeoutError:
        raise ConnectionError(f"No Dask scheduler answered at {target} within {timeout:g} s "
                              "(--dask_connection_timeout): something listens there but does not speak Dask's "
                              "protocol. Give the scheduler's address (`dask scheduler` prints it).") from None
    except OSError as e:
        raise ConnectionError(f"No Dask scheduler answered at {target}: {e}") from None
    server = identity.get("type") if isinstance(identity, dict) else None
    if server != "Scheduler":
        raise ConnectionError(f"{target} is a Dask {server or 'server'}, not a scheduler: give the scheduler's "
                              "address (`dask scheduler` prints it).")


def runner(options):
    """The runner object for `options`, or None where Beam resolves it from them.

    DirectRunner: its FnApiRunner backend directly. Beam's DirectRunner first
    tries the Prism runner, which downloads a binary at run time and ignores
    `direct_running_mode`; going straight to the FnApiRunner (what the
    DirectRunner falls back to) keeps builds offline and honours
    `direct_running_mode` / `direct_num_workers`. DaskRunner: by its short name
    too. Other runners (Dataflow, Flink, Spark, Prism): None.

    Args:
        options: `PipelineOptions`, see `pipeline_options`.

    Raises:
        ModuleNotFoundError: the DaskRunner without `distributed` installed.
    """
    name = options.view_as(StandardOptions).runner
    if is_dask(options):
        _require_distributed(options)
        from apache_beam.runners.dask.dask_runner import DaskRunner  # pylint: disable=import-outside-toplevel

        return DaskRunner()
    if name not in (None, "DirectRunner", "direct"):
        return None
    from apache_beam.portability.api import beam_provision_api_pb2  # pylint: disable=import-outside-toplevel
    from apache_beam.runners.portability import portable_runner  # pylint: disable=import-outside-toplevel
    from apache_beam.runners.portability.fn_api_runner import fn_runner  # pylint: disable=import-outside-toplevel

    encoded = portable_runner.JobServiceHandle.encode_pipeline_options(options.get_all_options())
    provision_info = fn_runner.ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)
    )
    return fn_runner.FnApiRunner(provision_info=provision_info)


def _dask_target(options):
    """The flag that names the Dask scheduler, as the user wrote it (for messages)."""
    values = options.get_all_options(drop_default=True)
    for flag, key in (("--dask_client_address", "address"), ("--dask_scheduler_file", "scheduler_file")):
        if values.get(key):
            return f"`{flag}={values[key]}`"
    return "a local Dask cluster"


_PROGRESS_SECONDS = 30  # how often a Dask build logs what its cluster is running


def _wait_for_dask(futures, client):
    """Waits until the DaskRunner's `futures` are computed, without fetching their values; raises a task's error.

    A future is released once computed: a worker lost afterwards does not make
    the scheduler compute the finished work again. A computed value lost before
    that (its worker died) is waited for again, as the scheduler computes it
    anew. Every `_PROGRESS_SECONDS` it logs how many tasks the workers run.
    """
    from distributed import wait  # pylint: disable=import-outside-toplevel

    waiting, start = set(futures), time.monotonic()
    while waiting:
        try:
            done, waiting = wait(list(waiting), timeout=_PROGRESS_SECONDS, return_when="FIRST_COMPLETED")
        except TimeoutError:
            running = client.processing()
            logging.info("Dask build, %.0f s: %d tasks running on %d workers", time.monotonic() - start,
                         sum(len(keys) for keys in running.values()), len(running))
            continue
        for future in done:
            if future.status == "finished":
                future.release()
            elif future.status == "lost":  # computed, then its worker died: the scheduler computes it again
                waiting.add(future)
            else:
                future.result()  # raises the task's error (KilledWorker where its workers died)


def _cluster_line(client):
    """`(workers, 'On the Dask cluster at tcp://HOST:PORT: 2 workers now (progress: DASHBOARD)')` for `client`.

    The workers are counted by `client.nthreads()`, which asks the scheduler: `client.scheduler_info()`
    returns a cached copy that the client's periodic refresh, which fetches no workers, may
    overwrite between the call's own fetch and its return (then it counts 0 workers). The dashboard
    is named only where its page answers: a scheduler without bokeh lists the service all the same,
    and its link gives 404.
    """
    workers = len(client.nthreads())
    services = client.scheduler_info().get("services", {})  # the cached copy keeps these
    link = client.dashboard_link if "dashboard" in services else None
    progress = f" (progress: {link})" if link and _page_answers(link) else ""
    return workers, f"On the Dask cluster at {client.scheduler.address}: {workers} workers now{progress}"


def _page_answers(url, timeout=2.0):
    """Whether an HTTP GET of `url` succeeds within `timeout` seconds."""
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return 200 <= response.status < 300
    except (OSError, ValueError):  # refused, unreachable, timed out, HTTP 4xx/5xx (HTTPError), a malformed link
        return False


def run(pipeline, options):
    """Runs `pipeline` (built with `runner(options)`) and waits for the end.

    On the DaskRunner it logs the cluster it runs on and, while it waits, the
    tasks running; it closes the scheduler connection at the end (cancelling
    what is left of a failed run) and turns its failures into one-line errors.

    Args:
        pipeline: `beam.Pipeline`, built with `runner=runner(options)`.
        options: `PipelineOptions`, see `pipeline_options`.

    Raises:
        ConnectionError: no Dask scheduler answered at the given address.
        WorkersLostError: a task's workers died more often than the scheduler retries.

    Example:
        ```python
        import apache_beam as beam

        from electra_tf.pipelines import runners

        options = runners.pipeline_options(["--direct_running_mode=in_memory"])
        pipeline = beam.Pipeline(runner=runners.runner(options), options=options)
        _ = pipeline | beam.Create(["a", "b"]) | beam.Map(str.upper)
        runners.run(pipeline, options)
        ```
    """
    dask = is_dask(options)
    try:
        result = pipeline.run()
    except OSError as e:
        if dask:
            raise ConnectionError(f"No Dask scheduler answered at {_dask_target(options)}: {e}") from e
        raise
    client = getattr(result, "client", None)  # the DaskRunner's connection to its scheduler
    try:
        if client is not None:
            workers, line = _cluster_line(client)
            logging.info("%s", line)
            if not workers:
                logging.warning("No Dask worker has joined the scheduler yet: the build waits for one.")
            _wait_for_dask(result.futures, client)
        else:
            result.wait_until_finish()
    except Exception as e:  # pylint: disable=broad-except
        if type(e).__name__ == "KilledWorker":  # distributed.scheduler.KilledWorker
            raise WorkersLostError(str(e)) from e
        raise
    finally:
        if client is not None:
            client.close()
