"""What every command line shares: how a command runs, and the door to the pieces it runs with.

A command module defines its flags in `define_flags()` (only when it runs as a program) and
ends with `cli.run(main, aliases=ALIASES)` instead of `app.run(main)`, or, as a console script,
`run = cli.console_script(sys.modules[__name__])`. Running it:

1. opens the null device on a standard stream that is closed (`standard_streams`); a command with
   `--backend` (`BACKEND_FLAG = True`) sets the Keras backend before Keras is imported
   (`backend_start`); then TensorFlow's start is prepared before TensorFlow is imported
   (`tensorflow_start`: oneDNN CPU kernels, log level) and its start-up lines quieted (`quiet`);
2. parses the flags with the shared vocabulary and its deprecated spellings (`flag_vocabulary`);
3. runs `main` behind the error boundary (`errors`): bad input is `error: <message>` on one line
   and exit 1, a usage error exit 2, `--debug` adds the traceback.

The names the commands use are here (`cli.define`, `cli.aliases`, `cli.prepare_tensorflow`,
`cli.fail`, ...); each lives in the module of its concern.
"""

import sys

from absl import app, flags

from electra_tf.cli import collector, process_exit, standard_streams
from electra_tf.cli.backend_start import check_backend, define_backend, select_backend
from electra_tf.cli.errors import ERROR_EXIT, PREEMPTED_EXIT, USAGE_EXIT, fail, guard, missing_module
from electra_tf.cli.flag_vocabulary import (DEPRECATED_FLAGS, aliases, define, define_init, define_model_dir,
                                            define_output_dir, define_seq_length, define_vocab_file, parse_flags,
                                            rewrite_deprecated)
from electra_tf.cli.quiet import quiet_beam_workers
from electra_tf.cli.standard_streams import require_stdout
from electra_tf.cli.tensorflow_start import cpu_kernels, gpu_device_present, prepare_tensorflow

__all__ = ["DEPRECATED_FLAGS", "ERROR_EXIT", "PREEMPTED_EXIT", "USAGE_EXIT", "add_usage", "aliases", "check_backend",
           "console_script", "cpu_kernels", "define", "define_backend", "define_init", "define_model_dir",
           "define_output_dir", "define_seq_length", "define_vocab_file", "fail", "gpu_device_present", "invoke", "missing_module", "prepare_tensorflow",
           "quiet_beam_workers", "require_stdout", "rewrite_deprecated", "run", "run_script", "select_backend"]


def run(main, known_only=False, aliases=None, tensorflow_first=True):  # pylint: disable=redefined-outer-name
    """`absl.app.run(main)` behind the error boundary; defines `--debug`.

    Args:
        main: callable(argv), the program.
        known_only: bool. Leave unknown flags in argv (the Beam builder passes them to Beam).
        aliases: dict old flag name -> new, the deprecated spellings accepted (see `aliases`).
        tensorflow_first: bool. Prepare TensorFlow's start before the flags are parsed (else `main` does).
    """
    standard_streams.open_closed()
    if tensorflow_first:
        prepare_tensorflow()
    _define_debug()
    _show_in_help()
    collector.settle()  # the modules the command's flags imported are permanent too
    app.run(guard(main, debug=lambda: flags.FLAGS.debug), flags_parser=parse_flags(known_only, aliases))


def console_script(program):
    """The console script of a command module: its Keras backend set (`BACKEND_FLAG`: `select_backend`),
    TensorFlow's start prepared, the module's flags defined (`define_flags`), its `main` run behind the
    error boundary (`run`) with its deprecated spellings (`ALIASES`). A module whose flags import no
    TensorFlow (`FLAGS_BEFORE_TENSORFLOW`) prepares TensorFlow's start in its `main`, after the checks of
    its flags: `--help` and a refused flag take a second, not TensorFlow's import. Each command ends with
    `run = cli.console_script(sys.modules[__name__])`.

    Run as the program (`python -m`, the console script), the process ends after its `atexit`
    handlers, without the interpreter's teardown (`process_exit`)."""
    def script():
        standard_streams.open_closed()  # before anything writes or opens a file
        if getattr(program, "BACKEND_FLAG", False):
            select_backend(sys.argv[1:])  # before anything imports Keras, which fixes its backend then
        tensorflow_first = not getattr(program, "FLAGS_BEFORE_TENSORFLOW", False)
        if tensorflow_first:
            prepare_tensorflow()  # before `define_flags`, which may import TensorFlow
        program.define_flags()  # else: TensorFlow-free; its `main` calls `prepare_tensorflow` after its checks
        shown = sys.modules.get("__main__")
        if shown is not None and shown is not program and not shown.__doc__:
            shown.__doc__ = program.__doc__  # the console script's `--help` prints the command's usage too
        try:
            run(program.main, aliases=getattr(program, "ALIASES", None), tensorflow_first=tensorflow_first)
        except SystemExit as stop:
            process_exit.leave(stop, script.__code__)  # ends the process here where nothing runs after it
            raise

    script.__doc__ = f"The `{program.__name__}` command."
    return script


def add_usage(program, text):
    """Appends `text` to the usage `--help` prints (absl prints `__main__`'s docstring before the flags):
    a part written where it is known when the command starts (`finetune`: the task kinds, from their
    descriptions). Called from `define_flags`; a second call adds nothing."""
    doc = program.__doc__ or ""
    if text not in doc:
        program.__doc__ = doc.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n"


def run_script(main):
    """`absl.app.run(main)` for the benchmark and experiment scripts: a usage error is one line.

    absl prints the module's docstring before an `app.UsageError`'s message; here the message is
    `error: ...` on one line and the exit status 2, as the commands' (`run`). Any other error
    keeps its traceback: these scripts measure, and a failure there should show where. Nothing
    here imports TensorFlow (the HF side of a benchmark runs where it is not installed).
    """
    def wrapped(argv):
        try:
            return main(argv)
        except app.UsageError as e:
            fail(str(e), USAGE_EXIT, " (see --help)")

    app.run(wrapped)


def invoke(program, args):
    """Runs the CLI module `program` in-process on the flags `args`, without the error boundary (tests).

    Defines its flags, parses `args` from the defaults (deprecated spellings included; a bad
    flag is one line and exit 2), then calls `program.main`. The global flags are left as they
    were: the flags defined here are removed again, so another module may define them later.
    """
    from absl.testing import flagsaver

    was_parsed = flags.FLAGS.is_parsed()
    try:
        with flagsaver.flagsaver():
            program.define_flags()
            _define_debug()
            flags.FLAGS.unparse_flags()
            argv = parse_flags(False, getattr(program, "ALIASES", None))([program.__name__, *args])
            return program.main(argv)
    finally:
        if not was_parsed:
            flags.FLAGS.unparse_flags()


def _define_debug():
    if "debug" not in flags.FLAGS:
        flags.DEFINE_bool("debug", False, "Print the traceback of an error, not only its message.")


def _show_in_help():
    """Makes the program's flags (wherever defined: here, its module, a console script) `--help`'s own."""
    program = sys.argv[0] if sys.argv else ""
    for module, module_flags in flags.FLAGS.flags_by_module_dict().items():
        if module != program and module.split(".")[0] in ("electra_tf", "pipelines"):
            for flag in module_flags:
                flags.FLAGS.register_key_flag_for_module(program, flag)
