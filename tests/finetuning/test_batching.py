"""The batched prediction pass of evaluation stops on a polled request (the fine-tuning loop's SIGTERM)."""

import gc

import numpy as np
import pytest

from electra_tf.finetuning.batching import predict_in_batches, stopping_when


class Stopped(Exception):
    pass


def _arrays(rows=48, length=16):
    mask = np.ones((rows, length), np.int32)
    return {"token_ids": mask * 5, "segment_ids": 0 * mask, "padding_mask": mask}


def test_a_request_during_a_batch_stops_the_pass_before_the_next():
    calls, requested = [], []

    def predict(inputs):
        calls.append(int(inputs["token_ids"].shape[0]))
        if len(calls) == 2:
            requested.append(True)  # the SIGTERM came during the second batch
        return inputs["token_ids"][:, 0]

    with stopping_when(lambda: bool(requested), Stopped), pytest.raises(Stopped):
        predict_in_batches(predict, _arrays(), 8)
    assert calls == [8, 8]  # of 6 batches, the one running when it came finished and no other started
    # Outside the block a request stops nothing: the whole pass, rows in order.
    out = predict_in_batches(lambda inputs: inputs["token_ids"][:, 0], _arrays(), 8)
    assert out.shape == (48,) and (out == 5).all()


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the dropped exception's report
def test_a_request_seen_inside_a_garbage_collector_callback_still_stops_the_pass():
    """What a signal handler that raised would lose: an exception raised while a gc callback runs (JAX registers
    one) is printed and dropped; the polled request is not."""
    requested, calls = [], []

    def callback(phase, info):
        if phase == "start" and len(calls) == 1 and not requested:
            requested.append(True)
            raise Stopped()  # what a raising handler would do here: dropped by the collector

    def predict(inputs):
        calls.append(1)
        gc.collect()
        return inputs["token_ids"][:, 0]

    gc.callbacks.append(callback)
    try:
        with stopping_when(lambda: bool(requested), Stopped), pytest.raises(Stopped):
            predict_in_batches(predict, _arrays(), 8)
    finally:
        gc.callbacks.remove(callback)
    assert len(calls) == 1
