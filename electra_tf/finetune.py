r"""Fine-tunes a pre-trained ELECTRA discriminator on a task of any kind that fine-tunes (the kinds: below).

    python -m electra_tf.finetune --task movie_polarity \
        --data_dir ../shared/data/tasks/movie_polarity --init runs/demo \
        --output_dir runs/movie_polarity --epochs 3 --batch_size 32 \
        --learning_rate 3e-4 --layerwise_lr_decay 0.8 --seq_length 128 --num_trials 5
    python -m electra_tf.finetune --task conll2003 --data_dir ~/.cache/electra_tf/benchmarks/conll2003 \
        --init hf:electra-small-discriminator --output_dir runs/conll2003
    python -m electra_tf.finetune --task my_ner --task_kind tagging --token_column 0 --label_column -1 \
        --data_dir my_ner --init runs/demo --output_dir runs/my_ner \
        --strategy mirrored --precision mixed_bfloat16
    python -m electra_tf.finetune --task squad --task_kind span_qa --data_dir ~/.cache/electra_tf/benchmarks/squad_v1.1 \
        --init runs/demo --output_dir runs/squad --seq_length 384 --doc_stride 128 --epochs 2

`--init` is any form `electra_tf.sources` lists (a pre-training `model_dir`,
a `.keras` file, `hf:DIR`, `bert:DIR`, ...; the discriminator of a pair is taken). `--task` is a
name a task kind claims (a GLUE name, a CoNLL-2003 name, squad, swag), or any name with
`--task_kind` for files of that kind's layout in `--data_dir`: each kind's files and what it writes are
listed under "Task kinds" below, from its description (`electra_tf.tasks.descriptions`).

Every flag is a field of `electra_tf.tasks.FinetuneConfig` (the recipe's fields,
`electra_tf.finetuning.config`, and each task kind's own, `electra_tf/tasks/<kind>/config.py`), which
holds the defaults (`--max_seq_length` is the deprecated spelling of `--seq_length`). The loop is `electra_tf.finetuning.trials.run_trials`:
the reference recipe (section 5), dev scored every epoch (one line each,
TensorBoard under `output_dir/logs`), the best epoch kept (`--keep`), a
checkpoint every `--save_checkpoints_steps` (re-run the same command after a
kill to resume; SIGTERM saves and exits 0). `--batch_size` is the global batch
under any `--strategy`. Each trial restarts from `--init` with seed `seed + trial`;
the dev (and labelled test) metrics of every trial and their mean / median /
std / min / max go to `output_dir/results.json`. The best trial's model is saved in
`output_dir` (the kind's model file: `classifier.keras`, ...) with `vocab.txt` and `finetune_config.json`,
which `python -m electra_tf.export --format serving` reads. `--backend jax|torch` (or `KERAS_BACKEND`)
fine-tunes with Keras' JAX or PyTorch trainer, the same files written, the backend recorded in the
settings; a run resumes on its own backend only (docs/finetuning.md, "On JAX or PyTorch").
Installed as `electra-finetune`.
"""

import os
import sys

from absl import app, flags

from electra_tf import backends, cli

ALIASES = cli.aliases("max_seq_length")
FLAGS_BEFORE_TENSORFLOW = True  # `define_flags` imports no TensorFlow: `main` prepares its start after the checks
BACKEND_FLAG = True  # `--backend`, read before Keras is imported


def define_flags(flag_values=flags.FLAGS):
    """One flag per `FinetuneConfig` field, its default and help from the field.

    Called when the module runs as a program, so importing it next to
    another CLI (`electra_tf.pretrain` defines `--seed` too) is harmless.
    """
    from electra_tf import tasks
    from electra_tf.config_fields import define_flags as define_field_flags
    from electra_tf.tasks import usage
    from electra_tf.tasks import FinetuneConfig

    define_field_flags(FinetuneConfig, flag_values)
    cli.define_backend(flag_values)
    # (the files every kind writes are spelled out: `run_files` imports the tokenizer, which --help does not need)
    cli.add_usage(sys.modules[__name__], "Task kinds (`--task_kind`): what each reads from --data_dir and writes "
                  "to --output_dir\n(besides results.json, vocab.txt, finetune_config.json, logs/):\n\n"
                  + usage.kinds_usage(tasks.descriptions()))


FLAGS = flags.FLAGS


def main(argv):
    from electra_tf import tasks
    from electra_tf.config_fields import fields
    from electra_tf.tasks import FinetuneConfig

    if len(argv) > 1:
        raise app.UsageError(f"Unexpected arguments: {argv[1:]}")
    cli.check_backend(FLAGS, "Fine-tuning", available=backends.BACKENDS)
    config = FinetuneConfig(**{name: FLAGS[name].value for name in fields(FinetuneConfig)})
    for name in ("task", "data_dir", "init", "output_dir"):
        if not getattr(config, name):
            raise app.UsageError(f"--{name} is required.")
    cli.prepare_tensorflow()  # before anything below imports it
    from electra_tf.finetuning import trials
    from electra_tf.run_files import RESULTS_FILE

    given = {name for name in fields(FinetuneConfig) if FLAGS[name].present}  # a kind's flags are its own
    results = trials.run_trials(config, tasks.for_config(config), given=given)  # what `tasks.finetune` runs
    if results is None:  # preempted: the checkpoint is saved, exit 0
        return
    metric = results["metric"]
    for trial in results["trials"]:
        print(f"trial {trial['trial']} seed {trial['seed']}: dev {metric} = {_number(trial['dev'].get(metric))}")
    s = results["summary"][f"dev_{metric}"]
    print(f"dev {metric}: mean {_number(s['mean'])} median {_number(s['median'])} std {_number(s['std'])} "
          f"min {_number(s['min'])} max {_number(s['max'])} ({len(results['trials'])} trials)")
    for name, s in results["summary"].items():
        if name.startswith("test") and name.endswith(f"_{metric}"):
            print(f"{name.replace('_' + metric, '')} {metric}: mean {_number(s['mean'])} (the kept model of each trial)")
    print(f"results: {os.path.join(config.output_dir, RESULTS_FILE)}")


def _number(value):
    return "n/a" if value is None else f"{value:.4f}"


run = cli.console_script(sys.modules[__name__])  # the `electra-finetune` console script

if __name__ == "__main__":
    run()
