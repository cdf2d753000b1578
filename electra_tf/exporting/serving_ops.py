"""Which ops a stock TensorFlow Serving model server runs, and which ops an export uses.

A SavedModel loads in `tensorflow_model_server` only if every op of every function in it is
registered in that binary: TensorFlow's own ops, plus what the server links in beside them.
`MODEL_SERVER_OPS` is that "beside them" list, read from the build files (not from memory):

- tensorflow/serving, tag `2.20.0` (commit bc7e9d2b9a419294c4526e293c2df8727b0d3116) and `master`
  (commit 9d981c5c2708d23c5407c7c1e30309e6f9798874, 2026-07-30; no 2.21 release yet),
  `tensorflow_serving/model_servers/BUILD`, linked into `tensorflow_model_server`:

      SUPPORTED_TENSORFLOW_OPS = if_v2([]) + if_not_v2([...contrib...]) + [
          "@org_tensorflow_text//tensorflow_text:ops_lib",
          "@org_tensorflow_decision_forests//tensorflow_decision_forests/tensorflow/ops/inference:kernel_and_op",
      ]

  and `tensorflow_serving/workspace.bzl`: `strip_prefix = "text-2.20.0"`
  (`https://github.com/tensorflow/text/archive/v2.20.0.zip`), `strip_prefix = "decision-forests-1.3.0"`.
- tensorflow/text, tag `v2.20.0` (commit 54015a801f4ebcf92149dca5140b3b3fa64bddbe),
  `tensorflow_text/BUILD`, `name = "ops_lib"`: the `*_cc` targets of `TEXT_OPS_LIB_TARGETS`; their
  op names from `REGISTER_OP("...")` in `tensorflow_text/core/ops/*.cc` and, for
  `REGISTER_TF_OP_SHIM(...)` ops, `static constexpr char kOpName[] = "..."` in
  `tensorflow_text/core/kernels/*_kernel_template.h`. `fast_bert_normalizer_cc`
  (`kOpName[] = "FastBertNormalize"`) and `fast_wordpiece_tokenizer_cc`
  (`kOpName[] = "FastWordpieceTokenizeWithOffsets"`) have been in `ops_lib` since tensorflow/text
  commit ed6ab37 (2022-03-31, "Add the kernel and op for FastBertNormalizer", first in v2.9.0).
- tensorflow/decision-forests, tag `1.3.0` (commit 3ca59e33216141e3569ad5b7c2597b4fbff6dc47),
  `tensorflow_decision_forests/tensorflow/ops/inference/op.cc`: `REGISTER_OP("SimpleML...")`.

History: tensorflow/serving#2064 ("Op type not registered 'FastBertNormalize'", TF Serving 2.10,
2022-10) was right for serving 2.10 / 2.11, which linked tensorflow/text 2.7.3 / 2.8.2; serving
2.12.0 to 2.19.x link text 2.12.1 (fast ops included, but not the later `TFText>RoundRobinTrim`
ops: tensorflow/serving#2267, #4057), 2.20.0 links text 2.20.0.

TensorFlow's own ops are the ones `tensorflow.python.framework.op_def_registry` knows in a
process that has not imported tensorflow_text (`core_ops`).

Example:
    >>> from electra_tf.exporting.serving_ops import MODEL_SERVER_OPS
    >>> "FastBertNormalize" in MODEL_SERVER_OPS, "TFText>RoundRobinTrim" in MODEL_SERVER_OPS
    (True, True)
"""

import json
import os
import subprocess
import sys

SERVING_RELEASE = "2.20.0"  # tensorflow/serving; master (2026-07-30) links the same op libraries
TEXT_RELEASE = "2.20.0"  # tensorflow/text, as workspace.bzl pins it

# tensorflow/text v2.20.0 `ops_lib` deps -> the ops they register.
TEXT_OPS_LIB_TARGETS = {
    "boise_offset_converter_cc": ("TFText>OffsetsToBoiseTags", "TFText>BoiseTagsToOffsets"),
    "byte_splitter_cc": ("TFText>ByteSplitWithOffsets", "TFText>ByteSplitByOffsets"),
    "constrained_sequence_op_cc": ("ConstrainedSequence",),
    "fast_bert_normalizer_cc": ("FastBertNormalize",),
    "fast_sentencepiece_tokenizer_cc": ("TFText>FastSentencepieceTokenize", "TFText>FastSentencepieceDetokenize"),
    "fast_wordpiece_tokenizer_cc": ("FastWordpieceTokenizeWithOffsets", "TFText>FastWordpieceDetokenize"),
    "mst_ops_cc": ("MaxSpanningTree",),
    "ngrams_op_cc": ("TFText>NgramsStringJoin",),
    "normalize_ops_cc": ("CaseFoldUTF8", "NormalizeUTF8", "NormalizeUTF8WithOffsetsMap", "FindSourceOffsets"),
    "phrase_tokenizer_cc": ("PhraseTokenize", "TFText>PhraseDetokenize"),
    "regex_split_ops_cc": ("RegexSplitWithOffsets",),
    "sentence_breaking_ops_cc": ("SentenceFragments",),
    "sentencepiece_tokenizer_cc": ("SentencepieceOp", "SentencepieceTokenizeOp", "SentencepieceTokenizeWithOffsetsOp",
                                   "SentencepieceDetokenizeOp", "SentencepieceVocabSizeOp",
                                   "SentencepieceIdToStringOp", "SentencepieceStringToIdOp"),
    "split_merge_from_logits_tokenizer_cc": ("TokenizerFromLogits",),
    "split_merge_tokenizer_cc": ("SplitMergeTokenizeWithOffsets",),
    "state_based_sentence_breaker_op_cc": ("SentenceFragmentsV2",),
    "text_similarity_metric_ops_cc": ("RougeL",),
    "trimmer_ops_cc": ("TFText>RoundRobinGenerateMasks", "TFText>RoundRobinTrim"),
    "unicode_script_tokenizer_cc": ("UnicodeScriptTokenizeWithOffsets",),
    "utf8_binarize_op_cc": ("TFText>Utf8Binarize",),
    "whitespace_tokenizer_cc": ("WhitespaceTokenizeWithOffsets",),
    "whitespace_tokenizer_v2_cc": ("TFText>WhitespaceTokenizeWithOffsetsV2",),
    "wordpiece_tokenizer_cc": ("WordpieceTokenizeWithOffsets",),
}
DECISION_FORESTS_OPS = ("SimpleMLCreateModelResource", "SimpleMLInferenceLeafIndexOpWithHandle",
                        "SimpleMLInferenceOp", "SimpleMLInferenceOpWithHandle", "SimpleMLLoadModelFromPath",
                        "SimpleMLLoadModelFromPathWithHandle")
MODEL_SERVER_OPS = frozenset(op for ops in TEXT_OPS_LIB_TARGETS.values() for op in ops) | frozenset(
    DECISION_FORESTS_OPS)


def saved_model_ops(export_dir):
    """Every op type in a SavedModel: its graph and every function of its library.

    Args:
        export_dir: str. A SavedModel folder.

    Returns:
        dict: op type -> sorted list of the functions (or `"<graph>"`) using it.
    """
    from tensorflow.python.saved_model import loader_impl

    uses = {}
    for meta_graph in loader_impl.parse_saved_model(export_dir).meta_graphs:
        for node in meta_graph.graph_def.node:
            uses.setdefault(node.op, set()).add("<graph>")
        for function in meta_graph.graph_def.library.function:
            for node in function.node_def:
                uses.setdefault(node.op, set()).add(function.signature.name)
    return {op: sorted(names) for op, names in uses.items()}


_CORE_OPS_SCRIPT = """
import json, sys
from tensorflow.python.framework import op_def_registry
assert "tensorflow_text" not in sys.modules
print(json.dumps([n for n in json.load(sys.stdin) if op_def_registry.get(n) is not None]))
"""


def core_ops(names):
    """The subset of op `names` TensorFlow registers itself (checked in a process without tensorflow_text)."""
    names = sorted(set(names))
    result = subprocess.run([sys.executable, "-c", _CORE_OPS_SCRIPT], input=json.dumps(names), text=True,
                            capture_output=True, check=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    return frozenset(json.loads(result.stdout.strip().splitlines()[-1]))


def unsupported_ops(*export_dirs, allowed=MODEL_SERVER_OPS):
    """Ops of SavedModels that neither TensorFlow nor `allowed` registers, each with where it is used.

    Args:
        *export_dirs: str. SavedModel folders (e.g. serving exports' version folders).
        allowed: set of op names the model server adds to TensorFlow's (default `MODEL_SERVER_OPS`).

    Returns:
        dict: op type -> `"<export_dir>: <function>"` strings; empty when the server can run them all.
    """
    uses = {}
    for export_dir in export_dirs:
        for op, functions in saved_model_ops(export_dir).items():
            uses.setdefault(op, []).extend(f"{export_dir}: {f}" for f in functions)
    missing = set(uses) - set(allowed)
    missing -= core_ops(missing)
    return {op: uses[op] for op in sorted(missing)}
