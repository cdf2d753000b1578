"""Config fields: every setting declared once (default, help, range, choices), and what follows from it.

A config is a dataclass of plain values (nanoGPT / big_vision style) that
derives from `Config` and declares each field with `field`:

    @dataclasses.dataclass
    class TrainConfig(Config):
        steps: int = field(1000, "Training steps.", range="[1, inf)")
        dropout: float = field(0.1, "Dropout rate.", range="[0, 1)")
        optimizer: str = field("adamw", "Update rule.", choices=("adamw", "lamb"))

From the declarations follow:

- the checks when a config is built (`Config.__post_init__`): each value's type,
  range and choices, as one line naming `--field`; a float is also finite;
- `fields(config_class)`, `Config.replace` (strings are parsed: overrides from
  the command line or a preset file) and `Config.to_json`;
- a flag per field (`define_flags`): its type (an enum with choices), its help
  and its range, checked when the flags are parsed.

A range is an interval written as in mathematics: `"[1, inf)"` is >= 1,
`"(0, inf)"` > 0, `"[0, 1)"` from 0 up to, not including, 1. Flags that are no
config field get the same range check through `define_flag` (`electra_tf.cli.define`).
"""

import dataclasses
import json
import math
import numbers
import re
import typing

FLAG_TYPES = {int: "integer", float: "float", bool: "bool", str: "string"}  # absl's DEFINE_<flag type>
_INTERVAL = re.compile(r"^\s*([\[(])\s*([^,\s]+)\s*,\s*([^\])\s]+)\s*([\])])\s*$")


@dataclasses.dataclass(frozen=True)
class Interval:
    """A range of numbers, from its text: `Interval.parse("[0, 1)")`.

    Args:
        low: float or None. The lower bound (None: -inf).
        high: float or None. The upper bound (None: inf).
        low_closed: bool. `low` itself is in the range.
        high_closed: bool. `high` itself is in the range.

    Example:
    >>> from electra_tf.config_fields import Interval
    >>> dropout = Interval.parse("[0, 1)")
    >>> dropout.contains(0.0), dropout.contains(1.0), dropout.contains(float("nan"))
    (True, False, False)
    >>> dropout.describe(), Interval.parse("(0, inf)").describe(), str(Interval.parse("[1, inf)"))
    ('in [0, 1)', '> 0', '[1, inf)')
    """

    low: typing.Optional[float]
    high: typing.Optional[float]
    low_closed: bool = True
    high_closed: bool = True

    @classmethod
    def parse(cls, text):
        match = _INTERVAL.match(text)
        if not match:
            raise ValueError(f"A range is written like '[1, inf)' or '(0, 1]'. Received: {text!r}")
        opening, low, high, closing = match.groups()
        return cls(_bound(low, "-inf"), _bound(high, "inf"), opening == "[", closing == "]")

    def contains(self, value):
        """Whether the number `value` is in the range (NaN and infinities never are)."""
        if not math.isfinite(value):
            return False
        if self.low is not None and (value < self.low if self.low_closed else value <= self.low):
            return False
        return self.high is None or (value <= self.high if self.high_closed else value < self.high)

    def describe(self, finite_too=False):
        """What a value must be, as in an error: `>= 1`, `> 0`, `in [0, 1)`, `a finite number`."""
        if self.low is None and self.high is None:
            return "a finite number"
        if self.high is None:
            return f"{'a finite number ' if finite_too else ''}{'>=' if self.low_closed else '>'} {self.low}"
        if self.low is None:
            return f"{'a finite number ' if finite_too else ''}{'<=' if self.high_closed else '<'} {self.high}"
        return f"in {self}"

    def __str__(self):
        low = "-inf" if self.low is None else self.low
        high = "inf" if self.high is None else self.high
        return f"{'[' if self.low_closed else '('}{low}, {high}{']' if self.high_closed else ')'}"


def _bound(text, unbounded):
    if text == unbounded:
        return None
    number = float(text)
    return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number


def check_range(name, value, interval):
    """Raises the one-line range error naming `--name` when `value` is outside `interval`, NaN or infinite.

    Args:
        name: str. The flag (or config field) name.
        value: number.
        interval: `Interval` or its text, e.g. "[0, inf)".

    Example:
    >>> from electra_tf.config_fields import check_range
    >>> check_range("num", 5, "[1, inf)")  # fine: nothing happens
    >>> check_range("num", -1, "[1, inf)")
    Traceback (most recent call last):
    ValueError: `--num` must be >= 1. Received: `--num=-1`
    """
    interval = Interval.parse(interval) if isinstance(interval, str) else interval
    if not interval.contains(value):
        wanted = interval.describe(finite_too=not math.isfinite(value))
        raise ValueError(f"`--{name}` must be {wanted}. Received: `--{name}={value}`")


def check_choice(name, value, choices):
    """Raises the one-line error naming `name` when `value` is not one of `choices`."""
    if value not in choices:
        raise ValueError(f"Unknown `{name}={value!r}`. Choose one of {list(choices)}.")


def field(default, help, range=None, choices=None):  # noqa: A002  (absl's word, the builtin's)
    """Declares a config field: its default, its help text and what values it takes.

    Args:
        default: the default value (a plain value: int, float, bool, str or None).
        help: str. One or two sentences: the flag's help and the field's documentation.
        range: str or None. The interval of a number, e.g. "[1, inf)" (see `Interval`).
        choices: sequence or None. The values a field takes (the flag becomes an enum).

    Returns:
        A `dataclasses.field` holding the declaration in its metadata.

    Example:
        ```python
        import dataclasses

        from electra_tf.config_fields import Config, field, fields

        @dataclasses.dataclass
        class Tiny(Config):
            steps: int = field(10, "Training steps.", range="[1, inf)")
            mode: str = field("fast", "How to run.", choices=("fast", "exact"))

        Tiny().replace(steps="20").steps  # 20 (strings are parsed)
        fields(Tiny)["mode"].choices  # ('fast', 'exact')
        ```
    """
    interval = Interval.parse(range) if range is not None else None
    return dataclasses.field(default=default, metadata={
        "help": help, "range": interval, "choices": tuple(choices) if choices is not None else None})


@dataclasses.dataclass(frozen=True)
class Field:
    """One declared field of a config class, as `fields` lists it.

    Args:
        name: str. The field, and its flag.
        value_type: type. int, float, bool or str (`Optional[X]` gives X).
        optional: bool. None is a value (the annotation is `Optional[...]`).
        default: the default value.
        help: str. Its help text.
        range: `Interval` or None.
        choices: tuple or None.
    """

    name: str
    value_type: type
    optional: bool
    default: typing.Any
    help: str
    range: typing.Optional[Interval]
    choices: typing.Optional[tuple]


def fields(config_class):
    """dict name -> `Field` of every field of `config_class` (a `Config` dataclass, or an instance), in order.

    Example:
        ```python
        from electra_tf.config import ElectraConfig
        from electra_tf.config_fields import fields

        hidden = fields(ElectraConfig)["hidden_dim"]
        hidden.value_type, hidden.default, str(hidden.range)  # (int, 256, '[1, inf)')
        ```
    """
    config_class = config_class if isinstance(config_class, type) else type(config_class)
    hints = typing.get_type_hints(config_class)
    out = {}
    for f in dataclasses.fields(config_class):
        value_type, optional = hints[f.name], False
        if typing.get_origin(value_type) is typing.Union:
            value_type, optional = next(a for a in typing.get_args(value_type) if a is not type(None)), True
        if "help" not in f.metadata:
            raise TypeError(f"{config_class.__name__}.{f.name} is not declared with `config_fields.field`.")
        out[f.name] = Field(f.name, value_type, optional, f.default, f.metadata["help"], f.metadata["range"],
                            f.metadata["choices"])
    return out


class Config:
    """The base of a config dataclass whose fields are declared with `field`.

    Building one checks every value against its declaration (`check`); a
    subclass with checks across fields adds them after `super().__post_init__()`.

    Example:
        ```python
        from electra_tf.finetuning.config import FinetuneConfig

        config = FinetuneConfig(epochs=2).replace(batch_size=16)
        try:
            config.replace(dropout=1.5)
        except ValueError as e:
            print(e)  # `--dropout` must be in [0, 1). Received: `--dropout=1.5`
        ```
    """

    def __post_init__(self):
        check(self)

    def replace(self, **overrides):
        """A copy with `overrides` applied; unknown names are an error, strings are parsed to the field's type."""
        declared = fields(self)
        unknown = sorted(set(overrides) - set(declared))
        if unknown:
            raise ValueError(f"Unknown config key(s) {unknown} of {type(self).__name__}. Known keys: "
                             f"{sorted(declared)}.")
        parsed = {name: _parse(declared[name], value) for name, value in overrides.items()}
        return dataclasses.replace(self, **parsed)

    @classmethod
    def with_fields_of(cls, *configs):
        """This config class with the fields of each of `configs` (`Config` dataclasses) added: one flag each.

        A plug-in declares its own settings where it lives (a task kind: `electra_tf/tasks/<kind>/config.py`)
        and a registry collects them (`electra_tf.tasks.FinetuneConfig`: the flags of `python -m
        electra_tf.finetune`). A tuple `HPARAMS` (the fields a run reports) is collected too. A name
        declared twice is an error naming both. A plug-in's own `__post_init__` (a check across its
        fields) runs on the collected config too.

        Example:
        >>> import dataclasses
        >>> from electra_tf.config_fields import Config, field, fields
        >>> from electra_tf.finetuning.config import FinetuneConfig
        >>> @dataclasses.dataclass
        ... class PairConfig(Config):
        ...     margin: float = field(0.5, "pair: the loss's margin.", range="[0, inf)")
        ...     HPARAMS = ("margin",)
        >>> Collected = FinetuneConfig.with_fields_of(PairConfig)
        >>> Collected(task="pairs", margin=0.2).hparams()["margin"], fields(Collected)["margin"].help
        (0.2, "pair: the loss's margin.")
        """
        owner = {f.name: cls.__name__ for f in dataclasses.fields(cls)}
        added, hparams = [], list(getattr(cls, "HPARAMS", ()))
        for config in configs:
            for f in dataclasses.fields(config):
                if f.name in owner:
                    raise TypeError(f"`{f.name}` is declared by both {owner[f.name]} and "
                                    f"{config.__module__}.{config.__qualname__}.")
                owner[f.name] = f"{config.__module__}.{config.__qualname__}"
                declared = dataclasses.field(default=f.default, metadata=f.metadata)
                added.append((f.name, typing.get_type_hints(config)[f.name], declared))
            hparams += [name for name in getattr(config, "HPARAMS", ()) if name not in hparams]
        checked = tuple(config for config in configs if "__post_init__" in vars(config))

        def __post_init__(self):
            cls.__post_init__(self)
            for config in checked:  # a plug-in's own checks across its fields, on its fields' values
                config(**{f.name: getattr(self, f.name) for f in dataclasses.fields(config)})

        namespace = {"__module__": cls.__module__, "__doc__": cls.__doc__, "__qualname__": cls.__qualname__,
                     "__post_init__": __post_init__}
        if hasattr(cls, "HPARAMS"):
            namespace["HPARAMS"] = tuple(hparams)
        return dataclasses.make_dataclass(cls.__name__, added, bases=(cls,), namespace=namespace)

    @classmethod
    def with_help(cls, **helps):
        """This config class with the help of the fields named in `helps` (name -> text) replaced: a help
        written where the text it lists is known (`electra_tf.tasks` lists the task kinds in `--task_kind`'s).

        Example:
        >>> from electra_tf.config_fields import fields
        >>> from electra_tf.finetuning.config import FinetuneConfig
        >>> fields(FinetuneConfig.with_help(seed="The first trial's seed."))["seed"].help
        "The first trial's seed."
        """
        unknown = sorted(set(helps) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise TypeError(f"{cls.__name__} has no fields {unknown}.")
        hints = typing.get_type_hints(cls)
        changed = [(f.name, hints[f.name], dataclasses.field(default=f.default, metadata={**f.metadata,
                                                                                          "help": helps[f.name]}))
                   for f in dataclasses.fields(cls) if f.name in helps]
        namespace = {"__module__": cls.__module__, "__doc__": cls.__doc__, "__qualname__": cls.__qualname__}
        if hasattr(cls, "HPARAMS"):
            namespace["HPARAMS"] = cls.HPARAMS
        return dataclasses.make_dataclass(cls.__name__, changed, bases=(cls,), namespace=namespace)

    def to_dict(self):
        return dataclasses.asdict(self)

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)


def check(config):
    """Checks (and normalises: an int in a float field becomes a float) every value of `config`.

    Raises a `ValueError` naming the field: the wrong type (`hidden_dim` expects an int; received '128'),
    a value outside its range (`--dropout` must be in [0, 1)...), one not among its choices.
    """
    for spec in fields(config).values():
        value = getattr(config, spec.name)
        if value is None and spec.optional:
            continue
        value = _typed(spec, value)
        setattr(config, spec.name, value)
        if spec.choices is not None:
            check_choice(spec.name, value, spec.choices)
        if spec.range is not None:
            check_range(spec.name, value, spec.range)
        elif spec.value_type is float:
            check_range(spec.name, value, Interval(None, None))


_ARTICLES = {int: "an int", float: "a float", bool: "a bool (true or false)", str: "a str"}


def _typed(spec, value):
    """`value` as the field's type when it is one (an int for a float field is converted); else a ValueError."""
    fits = {
        bool: isinstance(value, bool),
        int: isinstance(value, numbers.Integral) and not isinstance(value, bool),
        float: isinstance(value, numbers.Real) and not isinstance(value, bool),
        str: isinstance(value, str),
    }[spec.value_type]
    if not fits:
        none = " or null" if spec.optional else ""
        raise ValueError(f"`{spec.name}` expects {_ARTICLES[spec.value_type]}{none}; received {value!r} "
                         f"({type(value).__name__}).")
    return spec.value_type(value) if spec.value_type in (int, float) else value


def _parse(spec, value):
    """An override as the field's type: strings (a command line, a preset) are parsed."""
    if not isinstance(value, str) or spec.value_type is str:
        return value
    text = value.strip()
    if spec.optional and text.lower() in ("none", "null"):
        return None
    try:
        if spec.value_type is bool:
            if text.lower() in ("1", "true", "yes"):
                return True
            if text.lower() in ("0", "false", "no"):
                return False
            raise ValueError(text)
        return spec.value_type(text)
    except ValueError:
        raise ValueError(f"`{spec.name}` expects {_ARTICLES[spec.value_type]}; received {value!r}.") from None


def renamed(values, table):
    """A copy of the dict `values` (a config file's) with the old keys of `table` (old -> new) given their new names.

    The new name wins when a file holds both. Example:
    >>> from electra_tf.config_fields import renamed
    >>> renamed({"max_seq_length": 64, "epochs": 2}, {"max_seq_length": "seq_length"})
    {'epochs': 2, 'seq_length': 64}
    """
    out = {k: v for k, v in values.items() if k not in table}
    for old, new in table.items():
        if old in values and new not in out:
            out[new] = values[old]
    return out


# --- Flags ----------------------------------------------------------------------------------------


def define_flags(config_class, flag_values, preset_defaults=False):
    """Defines a flag per field of `config_class`: its type (an enum with choices), help and range.

    Args:
        config_class: a `Config` dataclass.
        flag_values: `absl.flags.FlagValues` to define them in (`flags.FLAGS`).
        preset_defaults: bool. Every flag defaults to None (a flag left unset keeps the value of
            a preset) and its help ends with "default: the preset's, else X"; else the flag's
            default is the field's.

    A flag already defined is left as it is. Example:
        ```python
        from absl import flags

        from electra_tf.config_fields import define_flags
        from electra_tf.finetuning.config import FinetuneConfig

        registered = flags.FlagValues()
        define_flags(FinetuneConfig, registered)
        registered(["prog", "--epochs", "5"])
        registered.epochs, registered["dropout"].help  # (5, 'Dropout before the task head ...')
        ```
    """
    for spec in fields(config_class).values():
        help_text = spec.help
        if preset_defaults:
            help_text = f"{help_text} (default: the preset's, else {spec.default!r})"
        define_flag("enum" if spec.choices else FLAG_TYPES[spec.value_type], spec.name,
                    None if preset_defaults else spec.default, help_text, flag_values, range=spec.range,
                    **({"enum_values": [str(c) for c in spec.choices]} if spec.choices else {}))


def define_flag(flag_type, name, default, help_text, flag_values, range=None, check=None, **kwargs):  # noqa: A002
    """`flags.DEFINE_<flag_type>(name, ...)` unless `name` is already defined; `range` and `check` apply when flags are parsed.

    A value out of `range` (NaN and infinities included), or one `check` refuses, is a bad
    flag: the command line is refused before anything runs, with one line naming `--name`.

    Args:
        flag_type: str. "integer", "float", "bool", "string", "enum", "list", ...
        name: str.
        default: the default value (None: unset).
        help_text: str.
        flag_values: `absl.flags.FlagValues`.
        range: str, `Interval` or None. The values a number flag takes, e.g. "[0, inf)".
        check: callable or None. `check(value)` raises a `ValueError` whose message names
            `--name` ("`--name` must be ...") for a value the flag does not take.
        **kwargs: passed to `DEFINE_<flag_type>` (`enum_values`, ...).
    """
    from absl import flags

    if name in flag_values:
        return
    getattr(flags, f"DEFINE_{flag_type}")(name=name, default=default, help=help_text, flag_values=flag_values,
                                     **kwargs)
    checks = [check] if check is not None else []
    if range is not None:
        interval = Interval.parse(range) if isinstance(range, str) else range
        checks.insert(0, lambda value: check_range(name, value, interval))
    if checks:
        def valid(value):
            if value is not None:
                try:
                    for one in checks:
                        one(value)
                except ValueError as e:
                    raise flags.ValidationError(str(e)) from None
            return True

        flags.register_validator(name, valid, flag_values=flag_values)
