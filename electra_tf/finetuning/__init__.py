"""Fine-tuning: one trial loop (`trials.run_trials`) and the task kinds that plug into it.

- `kinds`: the registry of task kinds by name (`KINDS`), which fine-tuning, export, predict and
  convert consult; `kind`: `TaskKind`, what a kind implements, from its files to serving.
- `trials`: the loop: trials, per-epoch evaluation, the kept epoch, checkpoints and resume, results.
- `classification`: GLUE / TSV / CSV sentence(-pair) classification and regression
  (`tasks`: the files; `task_metrics`: accuracy, F1, MCC, Pearson, Spearman).
- `tagging`: token classification (NER, chunking, POS) over CoNLL-column files
  (`conll`, `tagging_features`, `tagging_metrics`).
- `qa`: extractive QA over SQuAD-format files (`squad`, `qa_features`, `qa_metrics`).
- `multiple_choice`: SWAG CSVs or JSON Lines questions with choices (`multiple_choice_data`).
- `examples`: what a kind's `predict` reader returns and the readers' shared helpers.
- `recipe`: what every kind shares: argument checks, strategy, encoder copy, the
  optimiser (`layerwise_lr`); `batching`: epoch order and trimmed prediction batches.
- `config`: `FinetuneConfig`, every setting and its default (the CLI's flags).
"""
