r"""QA feature building time against context length: linear, seconds for a 5 MB context.

    python -m benchmarks.qa_features_scaling \
        --output benchmarks/results/qa_features_scaling.md

One question on one context made of SQuAD dev paragraphs joined end to end
until it holds the wanted number of WordPiece pieces (20k to 1.5M), and one
context of 5 MB of those paragraphs: `build_qa_features` (tokenization,
offsets, windows at seq_length 384 / doc_stride 128, max-context flags) is
timed with `--repeats` calls each (median). A flat microseconds per piece
column is what linear means (`tests/tasks/span_qa/test_qa_features_linear.py`
checks the features against the quadratic loop they replaced).
"""

import time

from absl import flags

from benchmarks import common
from electra_tf import cli
from electra_tf.data.tokenizer import WordPieceTokenizer
from electra_tf.tasks.span_qa import features as qa_features
from electra_tf.tasks.span_qa import squad
from electra_tf.tasks.span_qa.squad import QAExample

FLAGS = flags.FLAGS
flags.DEFINE_string("squad", common.bench_data("squad_v1.1", "dev.json"), "SQuAD JSON whose paragraphs make the contexts.")
flags.DEFINE_string("vocab", common.shared_data("vocab", "bert_uncased_vocab.txt"), "vocab.txt.")
flags.DEFINE_list("pieces", ["20000", "40000", "80000", "160000", "320000", "640000", "1000000", "1500000"],
                  "Context lengths in pieces.")
flags.DEFINE_float("megabytes", 5.0, "Size of the extra context in MB (UTF-8), 0 for none.")
flags.DEFINE_integer("repeats", 3, "Timed calls per size (median).")
flags.DEFINE_string("output", "benchmarks/results/qa_features_scaling.md", "Markdown output.")


def contexts(tokenizer, paragraphs, sizes, megabytes):
    """(label, text, pieces) for each size in pieces, cut from `paragraphs` repeated; and a `megabytes` one."""
    text = "\n".join(paragraphs)
    per_char = len(qa_features.tokenize_with_char_offsets(tokenizer, [text])[0][0]) / len(text)
    out = []
    wanted = [(f"{n:,} pieces", int(n / per_char * 1.02)) for n in sizes]
    if megabytes:
        wanted.append((f"{megabytes:g} MB", int(megabytes * 1e6)))
    for label, chars in wanted:
        long_text = (text * (chars // len(text) + 1))[:chars]
        if label.endswith("pieces"):
            ids = qa_features.tokenize_with_char_offsets(tokenizer, [long_text])[0][0]
            target = int(label.split()[0].replace(",", ""))
            long_text = long_text[:int(len(long_text) * target / len(ids))]
        out.append((label, long_text))
    return out


def time_build(tokenizer, example, repeats):
    times, features = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        features = qa_features.build_qa_features(tokenizer, [example], seq_length=384, doc_stride=128)
        times.append(time.perf_counter() - start)
    return common.median(times), features


def main(argv):
    del argv
    tokenizer = WordPieceTokenizer(FLAGS.vocab)
    examples = squad.read_squad(FLAGS.squad)
    paragraphs = list(dict.fromkeys(e.context for e in examples))
    rows = []
    for label, text in contexts(tokenizer, paragraphs, [int(n) for n in FLAGS.pieces], FLAGS.megabytes):
        example = QAExample("q", "What is the name of the river that flows through the city?", text)
        seconds, features = time_build(tokenizer, example, FLAGS.repeats)
        pieces = int(features.arrays["max_context"].sum())
        row = dict(label=label, megabytes=len(text.encode("utf-8")) / 1e6, pieces=pieces,
                   windows=features.stats["windows"], seconds=seconds, us_per_piece=seconds / pieces * 1e6)
        rows.append(row)
        print(row, flush=True)
    write(rows)


def write(rows):
    lines = [
        "# QA feature building against context length", "", f"`{common.command_line('benchmarks.qa_features_scaling')}`",
        "",
        "One question on one context of SQuAD v1.1 dev paragraphs joined end to end; `build_qa_features` "
        "(tokenization, character offsets, windows and max-context flags) at seq_length 384, doc_stride 128, "
        f"median of {FLAGS.repeats} calls. On a shared machine absolute times drift; the microseconds per piece "
        "column is the point: flat means linear.",
        "",
        "| context | MB (UTF-8) | pieces | windows | seconds | µs / piece |", "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r['label']} | {r['megabytes']:.2f} | {r['pieces']:,} | {r['windows']:,} | "
                     f"{r['seconds']:.2f} | {r['us_per_piece']:.2f} |")
    lines += ["", f"Versions: {common.versions_text()}; {common.machine()}.", ""]
    common.write_report("\n".join(lines), FLAGS.output)


if __name__ == "__main__":
    cli.run_script(main)
