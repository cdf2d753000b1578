"""`predict --passages FILE --top_k K` of an embedding model: each query's best passages by cosine similarity.

The passages (one per line, or JSON Lines `{"text": ...}`, told as `--input` is: by the
extension, else by the content, a text line that starts with `{` being text; blank lines
skipped) are embedded once by the served model's `serving_default`, as the queries are;
each query's record is then

    {"line": 1, "top_k": [{"index": 3, "score": 0.82, "text": "..."}, ...]}

best first, `index` the passage's 0-based position among the passages (blank lines not
counted), `score` the cosine similarity.
"""

import numpy as np
import tensorflow as tf

from electra_tf.data.lines import split_lines
from electra_tf.finetuning.examples import STDIN, field, json_object
from electra_tf.predicting.inputs import detect, read_text
from electra_tf.tasks.embedding.metrics import rank

DEFAULT_TOP_K = 10


def read_passages(path, kind):
    """The passages of `path`: text lines, or JSON Lines with "text", told as `--input`'s are for the embedding
    `kind` (`inputs.detect`: by extension, else by content; a text line that starts with `{` is text); errors name
    `--passages`, the file and the line."""
    from electra_tf import tasks

    text = read_text(path, flag="passages", what="the passages to rank")
    name = STDIN if path == "-" else path
    found = detect(path, text, kind, tasks.format_extensions())
    if found not in ("jsonl", "text"):
        raise ValueError(f"`--passages={path}` reads as {found}: passages are text lines or JSON Lines with \"text\" "
                         "(a .txt or .jsonl file).")
    lines = [(number, raw) for number, raw in enumerate(split_lines(text), start=1) if raw.strip()]
    if found == "jsonl":
        return [field(json_object(name, number, raw), ("text",), name, number) for number, raw in lines]
    return [raw for _, raw in lines]


def passage_settings(served, options, kind, batch_size=32):
    """`served.settings` with the passages of `options.passages` (read as the embedding `kind` reads its input),
    their vectors and `top_k` added."""
    passages = read_passages(options.passages, kind)
    signature = served.signatures["serving_default"]
    vectors = np.concatenate([signature(text=tf.constant(passages[i:i + batch_size]))["embedding"].numpy()
                              for i in range(0, len(passages), batch_size)])
    return dict(served.settings, passages=passages, passage_vectors=vectors,
                top_k=options.top_k or DEFAULT_TOP_K)


def top_passages(vector, settings):
    """The `top_k` records of one query's `vector`, best first."""
    indices, scores = rank(np.asarray(vector)[None, :], settings["passage_vectors"], settings["top_k"])
    return [{"index": int(i), "score": round(float(s), 7), "text": settings["passages"][i]}
            for i, s in zip(indices[0].tolist(), scores[0].tolist())]
