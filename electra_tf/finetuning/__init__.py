"""Fine-tuning: one trial loop (`trials.run_trials`) that every task kind (`electra_tf.tasks`) plugs into.

- `trials`: the loop: trials, per-epoch evaluation, the kept epoch, checkpoints and resume, results.
- `examples`: what a kind's `predict` reader returns, how it is asked to read, the readers' shared helpers.
- `recipe`: what every kind shares: argument checks, strategy, encoder copy, the
  optimiser (`layerwise_lr`); `batching`: epoch order and trimmed prediction batches.
- `task_metrics`: accuracy, F1, MCC, Pearson, Spearman (the kinds that score labels share them).
- `config`: `FinetuneConfig`, the recipe's settings and defaults (`electra_tf.tasks.FinetuneConfig` adds each
  kind's own: the CLI's flags).
"""
