"""Fine-tuning: one trial loop (`trials.run_trials`) and the task kinds that plug into it.

- `trials`: the loop: trials, per-epoch evaluation, the kept epoch, checkpoints and resume, results.
- `kind`: `TaskKind`, the interface a task kind implements (and its defaults).
- `classification`: GLUE / TSV / CSV sentence(-pair) classification and regression
  (`tasks`: the files; `task_metrics`: accuracy, F1, MCC, Pearson, Spearman).
- `tagging`: token classification (NER, chunking, POS) over CoNLL-column files
  (`conll`, `tagging_features`, `tagging_metrics`).
- `qa`: extractive QA over SQuAD-format files (`squad`, `qa_features`, `qa_metrics`).
- `recipe`: what every kind shares: argument checks, strategy, encoder copy, the
  optimiser (`layerwise_lr`); `batching`: epoch order and trimmed prediction batches.
- `config`: `FinetuneConfig`, every setting and its default (the CLI's flags).
"""
