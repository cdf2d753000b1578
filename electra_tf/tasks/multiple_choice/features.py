"""Multiple-choice features: every (context, choice) pair packed as training and serving pack it
(`pack_questions`), and what packing to `seq_length` cut (`cut_report`)."""

import numpy as np
import tensorflow as tf

HEAVY_CUT = 0.1  # a split of which this share of (context, choice) pairs or more is cut gets a warning



def pack_questions(questions, tokenizer, seq_length, chunk=4096):
    """Model inputs of `questions`: dict of int32 `tf.RaggedTensor`s `(len(questions), None, seq_length)`.

    Each (context, choice) pair is packed by `tokenizer.pack` as training and
    serving pack it; row `i` holds question `i`'s choices, no padding slot: a
    batch is padded to its own widest question (`batching.dense_rows`).

    Args:
        questions: list of `data.Question`.
        tokenizer: `WordPieceTokenizer`.
        seq_length: int.
        chunk: int. Pairs packed per call.
    """
    firsts, seconds = _pairs(questions)
    flat = {name: np.zeros((len(firsts), seq_length), np.int32)
            for name in ("token_ids", "segment_ids", "padding_mask")}
    for start in range(0, len(firsts), chunk):
        packed = tokenizer.pack(tf.constant(firsts[start:start + chunk]), tf.constant(seconds[start:start + chunk]),
                                seq_length=seq_length)
        for name, value in packed.items():
            flat[name][start:start + chunk] = value.numpy()
    row_lengths = np.array([len(q.choices) for q in questions], np.int64)
    return {name: tf.RaggedTensor.from_row_lengths(value, row_lengths) for name, value in flat.items()}



def _pairs(questions):
    """The first and second segments of every (context, choice) pair, question by question."""
    firsts = [question.context for question in questions for _ in question.choices]
    seconds = [second for question in questions for second in question.second_segments()]
    return firsts, seconds



def cut_report(questions, tokenizer, packed, seq_length, chunk=4096):
    """What packing to `seq_length` cut from `questions` (packed by `pack_questions`).

    Returns:
        dict: `pairs` (all), `cut_pairs` (pairs that lost pieces), `cut_pieces` (pieces lost),
        `blind` (questions whose choices all packed to the same tokens: nothing tells them apart)
        and `needed` (the shortest `seq_length` that keeps a piece of every choice of every question).
    """
    firsts, seconds = _pairs(questions)
    prompts = [question.question for question in questions for _ in question.choices]
    lengths = []
    for texts in (firsts, seconds, prompts):
        lengths.append(np.concatenate([tokenizer.tokenize(tf.constant(texts[i:i + chunk])).row_lengths().numpy()
                                       for i in range(0, len(texts), chunk)]))
    first, second, prompt = lengths
    full = 3 + first + second  # [CLS] first [SEP] second [SEP]
    # Longest-first truncation (`tokenizer.pair_lengths`) keeps `b` pieces of the second segment once the
    # budget is b + min(first, b): a choice shows its first piece from b = prompt + 1.
    shown = np.minimum(second, prompt + 1)
    needed = 3 + shown + np.minimum(first, shown)
    tokens = packed["token_ids"]
    starts = tokens.row_starts().numpy()
    flat = tokens.flat_values.numpy()
    same = (flat == np.repeat(flat[starts], tokens.row_lengths().numpy(), axis=0)).all(-1)
    return {"pairs": len(full), "cut_pairs": int((full > seq_length).sum()), "pieces": int((full - 3).sum()),
            "cut_pieces": int(np.maximum(full - seq_length, 0).sum()),
            "blind": int(np.logical_and.reduceat(same, starts).sum()), "needed": int(needed.max())}

