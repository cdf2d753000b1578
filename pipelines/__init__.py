"""Data pipelines: raw text -> WordPiece vocab -> packed pre-training TFRecords.

Modules (one concept each):

- `sentences`: the regex sentence splitter used for prose sources.
- `text_io`: the `Document` and `DocumentBatch` records, UTF-8 decoding,
  compressed-file reading.
- `text_files`, `wikipedia`, `books`: readers that yield documents
  (lists of sentences); `sources` expands input specs and picks a reader.
- `build_vocab`: WordPiece vocabulary training (Hugging Face `tokenizers`).
- `packing`: the official ELECTRA example packing (reference section 4) and
  the `tf.train.Example` encoder.
- `tfrecord`: TFRecord framing of a whole shard at once (compiled CRC-32C).
- `build_pretraining_data`: the Apache Beam pipeline text -> TFRecord shards.
- `runners`: the Beam runner a build runs on (DirectRunner, or a Dask cluster).
- `demo_corpus`: the embedded default corpus (`--data demo`).
- `inspect_records`: decodes records back to text.
"""
