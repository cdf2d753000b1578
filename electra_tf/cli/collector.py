"""Python's garbage collector in a command: off while TensorFlow imports, then told that the imports are permanent.

Importing TensorFlow, Keras and keras-hub leaves a few hundred thousand Python objects (modules,
functions, op wrappers, protocol-buffer descriptors) that live as long as the process. CPython's
cyclic collector visits every object it tracks at each full collection, and it runs them while
those objects are created and whenever a run makes many objects later (reading a CoNLL file,
building and tracing a model). `gc.freeze()`, CPython's answer for objects that live for good,
takes them out of every later collection; objects made afterwards are collected as ever.

Measured on a 32-step CoNLL-2003 fine-tuning run (`python -m electra_tf.finetune`, 2 cores), by
timing every collection with `gc.callbacks`: 1.8 s of the run was spent in the collector, 0.6 s
after, most of it while the CoNLL files are read (`git show 8108a41:benchmarks/results/finetune_end_to_end_tagging.md`).
"""

import contextlib
import gc


@contextlib.contextmanager
def importing():
    """No collection inside (imports make objects that live for good), then `settle`; a collector the
    caller had turned off stays off."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        settle(was_enabled)


def settle(enable=True):
    """Every object alive now is left out of later collections (`gc.freeze()`), and the collector
    is turned on (unless `enable` is False)."""
    gc.freeze()
    if enable:
        gc.enable()
