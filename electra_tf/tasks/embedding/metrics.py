"""Retrieval metrics of an embedding model on a split: its queries against the split's passages.

A split's distinct positives are the passage corpus; its distinct queries each have the
passages that were their positives as the relevant ones (`corpus_of`). Every query ranks
every passage by cosine similarity; then, averaged over the queries (the definitions of
sentence-transformers' `InformationRetrievalEvaluator`):

    recall@k   the share of the query's relevant passages among its k best
    mrr@10     1 / the rank of its first relevant passage within the 10 best (0 when none is)

Example:
>>> import numpy as np
>>> from electra_tf.tasks.embedding.metrics import retrieval_metrics
>>> queries = np.array([[1.0, 0.0], [0.0, 1.0]])
>>> passages = np.array([[0.0, 1.0], [1.0, 0.1], [0.9, 0.5]])
>>> retrieval_metrics(queries, passages, [{1}, {2}])  # query 1's passage ranks second
{'recall@1': 0.5, 'recall@10': 1.0, 'mrr@10': 0.75, 'queries': 2, 'passages': 3}
"""

import numpy as np

METRIC = "mrr@10"
CUTOFFS = (1, 10)


def corpus_of(pairs):
    """`(queries, passages, relevant)` of a split's `Pair`s: distinct texts in first-seen order, and per query the
    set of passage indices that were its positives."""
    passages, queries, relevant = {}, {}, []
    for pair in pairs:
        passage = passages.setdefault(pair.positive, len(passages))
        if pair.query not in queries:
            queries[pair.query] = len(queries)
            relevant.append(set())
        relevant[queries[pair.query]].add(passage)
    return list(queries), list(passages), relevant


def _unit(vectors):
    vectors = np.asarray(vectors, np.float64)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def rank(query_vectors, passage_vectors, k, chunk=1024):
    """`(indices, scores)` `(queries, min(k, passages))` of each query's `k` most similar passages, best first."""
    passages = _unit(passage_vectors)
    k = min(k, len(passages))
    indices, scores = [], []
    for start in range(0, len(query_vectors), chunk):
        similarity = _unit(query_vectors[start:start + chunk]) @ passages.T
        # Best first; ties broken by the passage's index (a stable sort of the negated scores).
        order = np.argsort(-similarity, axis=1, kind="stable")[:, :k]
        indices.append(order)
        scores.append(np.take_along_axis(similarity, order, axis=1))
    return np.concatenate(indices), np.concatenate(scores)


def retrieval_metrics(query_vectors, passage_vectors, relevant):
    """recall@1, recall@10 and mrr@10 of queries ranking passages by cosine similarity (see the module docstring).

    Args:
        query_vectors: `(queries, dim)`.
        passage_vectors: `(passages, dim)`.
        relevant: list (one per query) of sets of passage indices.
    """
    top, _ = rank(query_vectors, passage_vectors, max(CUTOFFS))
    recall = {k: [] for k in CUTOFFS}
    reciprocal = []
    for found, gold in zip(top, relevant):
        hits = np.array([i in gold for i in found.tolist()])
        for k in CUTOFFS:
            recall[k].append(hits[:k].sum() / len(gold))
        first = np.flatnonzero(hits[:10])
        reciprocal.append(1.0 / (first[0] + 1) if len(first) else 0.0)
    metrics = {f"recall@{k}": float(np.mean(recall[k])) for k in CUTOFFS}
    metrics[METRIC] = float(np.mean(reciprocal))
    return {**metrics, "queries": len(relevant), "passages": len(passage_vectors)}
