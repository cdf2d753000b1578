"""What the tagging kind is, for its users (`KindDescription`): `--help` and the guides list it."""

from electra_tf.tasks.base import KindDescription, Signature

IDS = ("token_ids", "segment_ids", "padding_mask")
WORDS = ("words", "tags", "word_start", "word_end", "num_words")
ENTITIES = ("entity_type", "entity_text", "entity_start", "entity_end", "num_entities")
SPANS = "a span tag set, as NER's or chunking's, also returns the entities"

DESCRIPTION = KindDescription(
    name="tagging",
    summary="token classification (NER, chunking, POS) over CoNLL-column files",
    auto_tasks=("conll2003", "conll2003_chunk", "conll2003_pos"),
    data="CoNLL-column files train.txt / dev.txt (/ test.txt) or eng.train / eng.testa (/ eng.testb): one word a "
         "line, a blank line between sentences (`--token_column`, `--label_column`, `--tag_scheme`)",
    predict_input='CoNLL columns (scored against the tags), JSON Lines {"words": [...], "tags": [...]} or '
                  '{"text": ...}, or raw text lines',
    record='{"line": 3, "text": "Peter Blackburn lives in Brussels", "words": [...], "tags": [...], "entities": '
           '[{"text": "Peter Blackburn", "type": "PER", "start": 0, "end": 15}]}',
    files=("token_classifier.keras",),
    signatures=(
        Signature("serving_default", ("text",), WORDS, optional=ENTITIES, when=SPANS),
        Signature("serve_words", ("text",), WORDS, optional=ENTITIES,
                  when="each whitespace token of `text` is a word; " + SPANS),
        Signature("predict_ids", IDS, ("probabilities", "label_id", "label")),
    ),
    guide="docs/finetuning.md#token-classification-ner-chunking-pos",
    serving_guide="docs/serving.md#a-tagger-ner-chunking-pos",
)
