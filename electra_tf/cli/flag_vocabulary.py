"""The one flag vocabulary of the command lines: shared names (`define_*`) and the deprecated spellings.

Every command line spells the shared ideas the same way:

    --vocab_file   the WordPiece vocab.txt (read, or written by pipelines.build_vocab)
    --seq_length   tokens per example, [CLS]/[SEP] included
    --init         the model to start from / to export
    --output_dir   where a command writes (convert: a directory, a .keras file or a prefix)
    --model_dir    the pre-training run (electra_tf.pretrain only: read and written)

The spellings of electra_tf 0.1 keep working for one release: each prints one line
`warning: --vocab is deprecated; use --vocab_file` and is read as the new flag
(`rewrite_deprecated`); given together with its new name and another value, the command line
is refused (`ContradictoryFlags`). `parse_flags` is the parser the commands run absl with.
"""

import re
import sys

from absl import flags

from electra_tf import config_fields
from electra_tf.cli.errors import USAGE_EXIT, fail

DEPRECATED_FLAGS = {
    "vocab": "vocab_file",
    "max_seq_length": "seq_length",
    "init_from": "init",
    "output": "output_dir",
}


def aliases(*old, **renamed):
    """The deprecated spellings a CLI accepts: `old` names from `DEPRECATED_FLAGS`, `renamed` its own.

    For instance `cli.aliases("vocab", "max_seq_length")`; `pipelines.build_vocab` writes the
    vocabulary, so its `--output` becomes `cli.aliases(output="vocab_file")`.
    """
    table = {name: DEPRECATED_FLAGS[name] for name in old}
    table.update(renamed)
    return table


class ContradictoryFlags(flags.Error):
    """A deprecated spelling and its new name given together with different values."""


def rewrite_deprecated(argv, table, stderr=None):
    """`argv` with every deprecated spelling of `table` (old -> new) replaced by the new one.

    Accepts `--old`, `-old`, `--old=value` and `--noold` (boolean flags); stops at `--`.
    Writes one warning line per deprecated flag used. A deprecated spelling given with its
    new name and another value (`--max_seq_length 64 --seq_length 96`) raises
    `ContradictoryFlags` naming both, before any warning: neither value is picked silently.
    """
    if not table:
        return list(argv)
    stderr = stderr or sys.stderr
    out, warned = list(argv[:1]), []
    given = {}  # new name -> [(name as given, its spelling, value)]
    rest = list(argv[1:])
    for i, arg in enumerate(rest):
        if arg == "--":
            out.extend(rest[i:])
            break
        new_arg = arg
        if arg.startswith("-") and not arg.startswith("---"):
            dashes = "--" if arg.startswith("--") else "-"
            name, eq, value = arg[len(dashes):].partition("=")
            prefix = ""
            if name not in table and name.startswith("no") and name[2:] in table:
                prefix, name = "no", name[2:]
            if name in table:
                new_arg = f"{dashes}{prefix}{table[name]}{eq}{value}"
                if name not in warned:
                    warned.append(name)
            target = table.get(name, name)
            if target in table.values():
                value = _flag_value(target, prefix, eq, value, rest[i + 1:i + 2])
                given.setdefault(target, []).append((name, f"--{prefix}{name}", value))
        out.append(new_arg)
    _refuse_contradictions(given, table)
    for name in warned:
        stderr.write(f"warning: --{name} is deprecated; use --{table[name]} "
                     "(the old spelling goes in the next release)\n")
    return out


def _flag_value(name, prefix, eq, value, following):
    """The value a flag given as `--[no]name[=value]` takes (the next argument when no `=`), parsed when defined."""
    flag = flags.FLAGS[name] if name in flags.FLAGS else None
    boolean = flag is not None and isinstance(flag, flags.BooleanFlag)
    if not eq:
        value = ("false" if prefix else "true") if boolean or prefix else (following[0] if following else None)
    if flag is not None and value is not None:
        try:
            return flag.parser.parse(value)
        except (ValueError, TypeError):
            pass  # absl names the bad value itself
    return value


def _refuse_contradictions(given, table):
    """Raises `ContradictoryFlags` when the old and the new spelling of a flag (`given`) carry different values."""
    for target, uses in given.items():
        if len({name for name, _, _ in uses}) > 1 and len({repr(value) for _, _, value in uses}) > 1:
            shown = " and ".join(dict.fromkeys(f"`{spelling}={value}`" for _, spelling, value in uses))
            old = "/--".join(sorted(name for name, new in table.items() if new == target))
            raise ContradictoryFlags(f"{shown} contradict each other: --{old} is the deprecated spelling of "
                                     f"--{target}. Give --{target} once.")


_RANGE_ERROR = re.compile(r"^flag --\w+=.*?: (`--\w+` must be .*)$")


def flag_error(error):
    """(one line, whether it says what the flag takes) of an absl flag error.

    A range error (`config_fields.define_flag`) says what the flag takes; it loses absl's prefix.

    Example:
    >>> from absl import flags
    >>> from electra_tf.cli.flag_vocabulary import flag_error
    >>> flag_error(flags.IllegalFlagValueError("flag --num=-1: `--num` must be >= 1. Received: `--num=-1`"))
    ('`--num` must be >= 1. Received: `--num=-1`', True)
    """
    lines = [line for line in str(error).splitlines() if line.strip()]
    ranges = [_RANGE_ERROR.match(line) for line in lines]
    if lines and all(ranges):
        return "; ".join(match.group(1) for match in ranges), True
    return " ".join(lines), False


def parse_flags(known_only, table=None):
    """absl's flags parser for a command: deprecated spellings of `table` rewritten, a bad flag one line and exit 2."""
    def parse(argv):
        try:
            return flags.FLAGS(rewrite_deprecated(argv, table), known_only=known_only)
        except ContradictoryFlags as e:
            fail(str(e), USAGE_EXIT)
        except flags.Error as e:
            text, named = flag_error(e)
            fail(text, USAGE_EXIT, "" if named else " (see --help)")
        except ValueError as e:  # absl's one plain ValueError: `--noFLAG=value` of a boolean flag
            if not str(e).endswith("does not take an argument"):
                raise
            name = str(e).split("=", 1)[0].lstrip("-")[2:]
            fail(f"flag {str(e).split()[0]}: --no{name} takes no value (it sets --{name} to false); write "
                 f"--no{name}, or --{name}=true|false", USAGE_EXIT)

    return parse


def define(flag_type, name, default, help_text, flag_values=None, range=None, check=None, **kwargs):  # noqa: A002
    """`flags.DEFINE_<flag_type>(name, ...)` unless `name` is already defined (so defining twice is harmless).

    `range` (e.g. "[0, inf)") and `check` (a function raising `ValueError`) apply when the flags
    are parsed, as a config field's range does: a value they refuse is a bad flag, refused
    naming it (`config_fields.define_flag`).
    """
    flag_values = flags.FLAGS if flag_values is None else flag_values
    config_fields.define_flag(flag_type, name, default, help_text, flag_values, range=range, check=check, **kwargs)


def define_vocab_file(help_text="WordPiece vocab.txt.", default=None, flag_values=None):
    define("string", "vocab_file", default, help_text, flag_values)


def define_seq_length(default, help_text="Tokens per example, [CLS]/[SEP] included.", flag_values=None,
                      range="[3, inf)"):  # noqa: A002  ([CLS] x [SEP])
    define("integer", "seq_length", default, help_text, flag_values, range=range)


def define_init(help_text="The model to start from.", flag_values=None):
    define("string", "init", None, help_text, flag_values)


def define_output_dir(help_text="Output directory.", flag_values=None):
    define("string", "output_dir", None, help_text, flag_values)


def define_model_dir(help_text="The pre-training run: checkpoints, logs, config and the trained "
                     "discriminator.", flag_values=None):
    define("string", "model_dir", None, help_text, flag_values)
