"""TF Serving's warm-up file for a served SavedModel: one batch-1 request for each length a call can be padded to.

TensorFlow builds oneDNN kernels for each new input shape, and a served graph pads a call to its longest
request rounded up to a multiple of `pad_multiple` (`tokenizer.padded_length`): a batch-1 request has
`seq_length / pad_multiple` shapes, and the first request of each pays for the build. TF Serving replays the
requests of `<version>/assets.extra/tf_serving_warmup_requests` when it loads a version, before it serves it
(its "SavedModel warm-up"), so the version answers its first requests of every length as fast as later ones.

The file is a TFRecord file of `tensorflow.serving.PredictionLog` messages, each a `PredictLog` whose
`PredictRequest` asks `serving_default` for one request of repeated one-letter words ("x x x ...": one word
piece each in any WordPiece vocabulary), as many as fill that length. Only a signature whose inputs are all
strings gets one; the messages are encoded here from the field numbers of TF Serving's protos
(`tensorflow_serving/apis/prediction_log.proto`, `predict.proto`, `model.proto`), so an export needs no
tensorflow-serving-api (the tests read the file back with it).

Example:
    >>> import tensorflow as tf
    >>> from electra_tf.exporting.warmup import warmup_inputs
    >>> specs = [tf.TensorSpec([None], tf.string, name="text")]
    >>> [inputs["text"][0].count("x") for inputs in warmup_inputs(specs, seq_length=24, pad_multiple=8)]
    [6, 14, 22]
    >>> warmup_inputs([tf.TensorSpec([None, None], tf.int32, name="token_ids")], 24, 8)  # ids: no warm-up
    []
"""

import os

import numpy as np
import tensorflow as tf

from electra_tf.run_files import SERVING_WARMUP_FILE

SIGNATURE = "serving_default"
CHOICES = 2  # choices per request for an input of rank 2 (multiple choice)
WORD = "x"  # a single letter: in every WordPiece vocabulary, one piece, one word


def warmup_inputs(specs, seq_length, pad_multiple):
    """The inputs of one batch-1 request per padded length, shortest first.

    Args:
        specs: sequence of named `tf.TensorSpec`s (a signature's `input_signature`), in the order the
            request packs them.
        seq_length: int. The longest padded length.
        pad_multiple: int. Padded lengths are its multiples (and `seq_length`).

    Returns:
        list of dict input name -> numpy string array (`[1]`, or `[1, CHOICES]` for a rank-2 input); empty when
        an input is not a string.
    """
    if not specs or any(spec.dtype != tf.string or spec.shape.rank not in (1, 2) or not spec.name for spec in specs):
        return []
    lengths = sorted({min(length, seq_length) for length in range(pad_multiple, seq_length + pad_multiple,
                                                                      pad_multiple)})
    requests = []
    for length in lengths:
        words = max(len(specs), length - len(specs) - 1)  # [CLS] and a [SEP] after each segment
        share = [words // len(specs) + (i < words % len(specs)) for i in range(len(specs))]
        inputs = {}
        for spec, count in zip(specs, share):
            text = " ".join([WORD] * max(1, count))
            inputs[spec.name] = np.array([[text] * CHOICES] if spec.shape.rank == 2 else [text], dtype=object)
        requests.append(inputs)
    return requests


def prediction_log(inputs, signature_name=SIGNATURE):
    """One serialized `PredictionLog` holding a `PredictRequest` of `inputs` for `signature_name`."""
    entries = b"".join(_field(2, _field(1, name.encode()) + _field(2, tf.make_tensor_proto(value).SerializeToString()))
                       for name, value in inputs.items())  # map<string, TensorProto> inputs = 2
    request = _field(1, _field(3, signature_name.encode())) + entries  # ModelSpec model_spec = 1 (signature_name = 3)
    return _field(6, _field(1, request))  # PredictionLog.predict_log = 6, PredictLog.request = 1


def write_warmup_file(version_folder, specs, seq_length, pad_multiple):
    """Writes `version_folder/assets.extra/tf_serving_warmup_requests` for `serving_default`'s input `specs`.

    Returns:
        The file's path, or None when an input is not a string (nothing to write).
    """
    requests = warmup_inputs(specs, seq_length, pad_multiple)
    if not requests:
        return None
    path = os.path.join(version_folder, SERVING_WARMUP_FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tf.io.TFRecordWriter(path) as writer:
        for inputs in requests:
            writer.write(prediction_log(inputs))
    return path


def _field(number, payload):
    """A length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value):
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)
