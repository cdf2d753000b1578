"""The per-kind text of the commands' usage, rendered from the kinds' descriptions (`tasks.descriptions()`).

`task_kind_help` is `finetune --task_kind`'s help; `kinds_usage` is the "Task kinds" part of
`finetune --help` and `predict --help`. Both take the descriptions (the registry passes them): nothing
here imports a kind.

Example:
>>> from electra_tf import tasks
>>> from electra_tf.tasks import usage
>>> usage.task_kind_help(tasks.descriptions()).startswith("The task's kind. auto:")
True
>>> "tagging: " in usage.kinds_usage(tasks.descriptions())
True
"""

import textwrap


def task_kind_help(described):
    """`finetune --task_kind`'s help from `described` (name -> `KindDescription`): auto, then each kind that
    fine-tunes with its summary."""
    kinds = "; ".join(f"{d.name}: {d.summary}" + (f" (auto for {', '.join(d.auto_tasks)})" if d.auto_tasks else "")
                      for d in described.values() if d.finetunes)
    default = next(iter(described))
    return f"The task's kind. auto: the kind that claims the task's name, else {default}. The kinds: {kinds}."


def kinds_usage(described, predict_formats=None):
    """What each kind of `described` (name -> `KindDescription`) reads and writes, for a command's `--help`.

    For `finetune` (no `predict_formats`): each fine-tuning kind's files (`--data_dir`) and what its
    `--output_dir` holds; for `predict` (`predict_formats`: name -> its `TaskKind.predict_formats`):
    each kind's input (`--input`) and one output record.
    """
    finetuned_only = predict_formats is None
    lines = []
    for d in described.values():
        if finetuned_only and not d.finetunes:
            continue
        parts = ({"--data_dir": d.data, "--output_dir": ", ".join(d.files)} if finetuned_only
                 else {"input": f"{d.predict_input} (--input_format {', '.join(predict_formats[d.name])})",
                       "record": d.record})
        parts["guide"] = d.guide if finetuned_only else f"{d.guide}; served: {d.serving_guide}"
        lines.append(f"    {d.name}: {d.summary}")
        lines += [textwrap.fill(text, 108, initial_indent=f"        {name}: ", subsequent_indent=" " * 12,
                                break_on_hyphens=False, break_long_words=False) for name, text in parts.items()]
    return "\n".join(lines)
