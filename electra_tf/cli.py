"""The error boundary of every command line: `error: <message>` on one line, the traceback with --debug.

Each CLI ends with `cli.run(main)` instead of `app.run(main)`. Bad input
(`ValueError` and the project's errors built on it, `TypeError` for a model of
the wrong kind, `OSError` such as `FileNotFoundError`, corrupt data reported
by TensorFlow) prints

    error: No pre-training files match `--data=records/*`.

and exits 1; a missing or malformed flag prints one line and a `--help` hint
and exits 2. `--debug` adds the traceback. Anything else (a bug) keeps
Python's traceback.
"""

import sys
import traceback

from absl import app, flags

USAGE_EXIT = 2
ERROR_EXIT = 1


def errors():
    """The exception types that are bad input, not bugs (TensorFlow's only when it is loaded)."""
    kinds = [ValueError, OSError, TypeError, FloatingPointError]  # TypeError: a model of the wrong kind
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        kinds.append(tf.errors.OpError)  # DataLossError, NotFoundError, InvalidArgumentError, ...
    return tuple(kinds)


def message(error):
    """The one-line text of an error (TensorFlow errors carry theirs in `.message`)."""
    text = getattr(error, "message", None) if not isinstance(error, (ValueError, OSError, TypeError)) else None
    text = text or str(error) or type(error).__name__
    if isinstance(error, KeyError) and text.startswith("'"):
        text = text.strip("'")
    return text


def fail(text, exit_code=ERROR_EXIT, hint=""):
    sys.stderr.write(f"error: {text}{hint}\n")
    sys.stderr.flush()
    sys.exit(exit_code)


def guard(main, debug=lambda: False, program=None):
    """`main` wrapped: bad input -> `error: ...` and exit 1, usage errors -> one line and exit 2."""
    hint = f" (see `{program} --help`)" if program else " (see --help)"

    def wrapped(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        except app.UsageError as e:
            if debug():
                traceback.print_exc()
            fail(str(e), USAGE_EXIT, hint)
        except errors() as e:
            if debug():
                traceback.print_exc()
            fail(message(e))

    return wrapped


def _parse_flags(known_only):
    def parse(argv):
        try:
            return flags.FLAGS(argv, known_only=known_only)
        except flags.Error as e:
            fail(str(e).replace("\n", " "), USAGE_EXIT, " (see --help)")

    return parse


def run(main, known_only=False):
    """`absl.app.run(main)` behind the error boundary; defines `--debug`.

    Args:
        main: callable(argv), the program.
        known_only: bool. Leave unknown flags in argv (the Beam builder passes them to Beam).
    """
    if "debug" not in flags.FLAGS:
        flags.DEFINE_bool("debug", False, "Print the traceback of an error, not only its message.")
    app.run(guard(main, debug=lambda: flags.FLAGS.debug), flags_parser=_parse_flags(known_only))
