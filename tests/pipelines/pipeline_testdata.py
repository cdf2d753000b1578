"""Constants shared by the pipeline tests: paths, the in-memory runner flag, sample text."""

import os
import sys


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if REPO not in sys.path:  # the source tree: `electra_tf` (and its mapped `electra_tf.pipelines`)
    sys.path.insert(0, REPO)
SHARED_DATA = os.path.join(REPO, "..", "shared", "data")
BERT_VOCAB = os.path.join(SHARED_DATA, "vocab", "bert_uncased_vocab.txt")
CORPUS_DIR = os.path.join(SHARED_DATA, "corpus")

IN_MEMORY = ["--direct_running_mode=in_memory"]

SAMPLE_TEXT = """The quick brown fox jumps over the lazy dog.
Café owners in Zürich serve crème brûlée at 9 a.m. every day!
Is this the real life, or is this just fantasy?

Transformers such as ELECTRA learn by detecting replaced tokens.
A small generator proposes plausible replacements for masked words.
The discriminator predicts, for every token, whether it was replaced.

Numbers like 3.14159 and 2,718 appear in scientific writing.
東京 is the capital of Japan, and naïve readers enjoy its façades.
"""


