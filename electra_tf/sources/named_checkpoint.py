"""Checkpoints that name every variable by its place in the model, and restore all of it or fail.

`tf.train.Checkpoint(model=keras_model)` does not see Keras 3 layers kept in
Python lists (keras-team/keras#18398): ELECTRA's transformer blocks reached a
checkpoint only as positional entries of the optimizer. Here the checkpoint
is built from explicit names instead, so nothing depends on what TF's
object-graph tracking happens to follow:

    model/<layer>/<sublayer>/.../<variable>      every variable of the model
    optimizer/slots/<model variable>/<slot>      Adam moments, accumulators, ...
    optimizer/state/<name>                       iterations, loss scale, ...
    metrics/<metric>/<variable>                  the epoch's metric totals so far (optional)
    loss_scale/<name>                            a loss scaler's scale, growth counter, skipped count (optional)

(The input position needs no entry: it is the step; see `pretraining_dataset`.)

A model variable's name is the chain of attributes that holds it, from the
model down (`discriminator/transformer_layers/1/self_attention_layer/
query_dense/kernel`), as Keras' own `.weights.h5` saving walks a model. A
layer reached twice (the shared embeddings) is named where it is first
reached, in attribute order. So names do not depend on build or creation
order, and Keras' per-process numbering (`dropout_5`) never enters them.
`tf.train.list_variables` shows them all. Under JAX and PyTorch each Keras variable enters the
checkpoint through `_BackendVariable`, under the same key: the files are laid out as on TensorFlow.

Restoring checks the file before reading it: every variable the model has
must be there with its shape, and nothing of the model's part may be left
over; the error names what is missing or unexpected. Checkpoints written by
electra_tf 0.1 (the positional layout) are recognised and mapped through the
optimizer's variable order, verified against every shape (`restore_legacy`).
"""

import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging
from tensorflow.core.protobuf import trackable_object_graph_pb2
from tensorflow.python.trackable import base as trackable_base

from electra_tf import run_files

MODEL = "model"
OPTIMIZER = "optimizer"
METRICS = "metrics"
LOSS_SCALE = "loss_scale"
_OPTIONAL = (METRICS, LOSS_SCALE)  # restored when the checkpoint has them, left as they are otherwise
_VALUE = "/.ATTRIBUTES/VARIABLE_VALUE"
_LEGACY_KEY = "optimizer/_trainable_variables/0" + _VALUE


class CheckpointMismatchError(ValueError):
    """A checkpoint does not hold exactly the variables of the model it is restored into."""


def model_variables(model):
    """Every variable of a Keras model under its structural name.

    Args:
        model: a built `keras.Layer` / `keras.Model`.

    Returns:
        dict name -> variable, in walk order, covering `model.variables` exactly.

    Example:
        ```python
        from electra_tf.models.encoder import ElectraEncoder
        from electra_tf.sources.named_checkpoint import model_variables

        encoder = ElectraEncoder(
            vocab_size=50, num_layers=1, num_heads=2, hidden_dim=8,
            embedding_dim=8, intermediate_dim=16,
        )
        encoder.build()
        names = model_variables(encoder)
        assert "transformer_layers/0/feedforward_output_dense/kernel" in names
        ```
    """
    names, seen = {}, set()

    def visit(layer, prefix):
        for variable in list(layer._trainable_variables) + list(layer._non_trainable_variables):
            if id(variable) not in seen:
                seen.add(id(variable))
                _add(names, prefix + variable.name, variable)
        for name, child in _children(layer):
            if id(child) in seen:
                continue
            seen.add(id(child))
            if isinstance(child, keras.random.SeedGenerator):  # dropout RNG state: exact resume needs it
                seen.add(id(child.state))
                _add(names, prefix + name, child.state)
            else:
                visit(child, f"{prefix}{name}/")

    seen.add(id(model))
    visit(model, "")
    unnamed = [v.path for v in model.variables if id(v) not in seen]
    if unnamed:
        raise RuntimeError(f"Variables not reached through layer attributes: {unnamed}")
    return names


def _children(layer):
    """(name, object) of the sublayers and seed generators a layer holds, by attribute, in assignment order.

    Attribute names, not `layer.name`: Keras numbers unnamed layers per process
    (`dropout_5`), so layer names change with what was built before.
    """
    for attribute, value in vars(layer).items():
        if attribute in _KERAS_BOOKKEEPING:
            continue
        name = attribute.lstrip("_")
        if isinstance(value, dict):
            items = [(f"{name}/{key}", item) for key, item in value.items()]
        elif isinstance(value, (list, tuple)):
            items = [(f"{name}/{i}", item) for i, item in enumerate(value)]
        else:
            items = [(name, value)]
        for child_name, child in items:
            if isinstance(child, (keras.Layer, keras.random.SeedGenerator)):
                yield child_name, child


# Keras' and TF's own registries of what a layer tracks; the walk names things by the attributes that hold them.
_KERAS_BOOKKEEPING = frozenset(
    ("_layers", "_seed_generators", "_metrics", "_trainable_variables", "_non_trainable_variables",
     "_tracker", "_inbound_nodes", "_outbound_nodes", "_loss_ids", "_losses",
     "_self_unconditional_dependency_names", "_self_unconditional_checkpoint_dependencies",
     "_self_unconditional_deferred_dependencies")
)


def optimizer_variables(optimizer, model_names):
    """Every variable of a built Keras optimizer, slots named after their model variable.

    A slot list is any list attribute holding one variable (or None) per
    trained variable, in the optimizer's order (`_momentums`, `_velocities`,
    `_accumulated_gradients`, ...); the slot's name is the attribute's. The
    rest (`iteration`, `learning_rate`, a loss scale) keep their own names.
    A wrapping `LossScaleOptimizer`'s inner optimizer is walked too.
    """
    by_id = {id(v): name for name, v in model_names.items()}
    names, named = {}, set()
    for opt in _optimizer_chain(optimizer):
        trained = list(opt._trainable_variables)
        for attribute, value in sorted(vars(opt).items()):
            if (attribute == "_trainable_variables" or attribute.startswith("_self")
                    or not isinstance(value, list) or not value or len(value) != len(trained)
                    or not all(v is None or isinstance(v, keras.Variable) for v in value)):
                continue
            for variable, slot in zip(trained, value):
                if slot is not None and id(slot) not in named:
                    named.add(id(slot))
                    _add(names, f"slots/{by_id[id(variable)]}/{attribute.strip('_')}", slot)
    for variable in optimizer.variables:
        if id(variable) not in named:
            named.add(id(variable))
            _add(names, f"state/{variable.name}", variable)
    return names


def checkpoint_names(model, optimizer=None, metrics=(), loss_scale=None):
    """section -> {name: variable} of what a checkpoint of a run holds (see `NamedCheckpoint`): the one naming
    of TensorFlow's checkpoints and of the Keras checkpoints of the other backends (`training.keras_checkpoints`)."""
    names = {MODEL: model_variables(model)}
    if optimizer is not None:
        names[OPTIMIZER] = optimizer_variables(optimizer, names[MODEL])
    if metrics:
        names[METRICS] = {f"{m.name}/{v.name}": v for m in metrics for v in m.variables}
    if loss_scale:
        names[LOSS_SCALE] = dict(loss_scale)
    return names


class NamedCheckpoint:
    """A `tf.train.Checkpoint` of a model (and optionally its optimizer) by name.

    Args:
        model: built Keras model.
        optimizer: optional built Keras optimizer of `model`.
        metrics: optional Keras metrics whose state (totals, counts) is saved too, so a run
            resumed mid-epoch reports the whole epoch. A checkpoint without them (written
            before they were saved) restores the rest and leaves them as they are.
        loss_scale: optional dict name -> variable of a loss scaler's own state
            (`CountingLossScaleOptimizer.state()`); optional at restore, as `metrics`.

    Attributes:
        checkpoint: the `tf.train.Checkpoint` (give it to a `CheckpointManager`).
        names: dict section -> {name: variable}.

    Example:
        ```python
        from electra_tf.models.encoder import ElectraEncoder
        from electra_tf.sources.named_checkpoint import NamedCheckpoint

        encoder = ElectraEncoder(
            vocab_size=50, num_layers=1, num_heads=2, hidden_dim=8,
            embedding_dim=8, intermediate_dim=16,
        )
        encoder.build()
        path = NamedCheckpoint(encoder).checkpoint.write("named_example/ckpt")
        NamedCheckpoint(encoder).restore(path)
        ```
    """

    def __init__(self, model, optimizer=None, metrics=(), loss_scale=None):
        self.model, self.optimizer = model, optimizer
        self.names = checkpoint_names(model, optimizer, metrics, loss_scale)
        self.checkpoint = tf.train.Checkpoint(**{s: _nest(v) for s, v in self.names.items()})

    def restore(self, path):
        """Restores every variable of this object's sections from `path`, or raises.

        A checkpoint may hold more sections than asked for (an optimizer when
        only the model is restored); within a section, the file and the model
        must hold the same names with the same shapes.

        Returns:
            str: "named", or "legacy" for a positional electra_tf 0.1 checkpoint.

        Raises:
            CheckpointMismatchError naming the missing, unexpected or
            mis-shaped variables.
        """
        stored = dict(tf.train.list_variables(path))
        if _LEGACY_KEY in stored:  # the named layout has no `optimizer/_trainable_variables`
            self.restore_legacy(path)
            return "legacy"
        sections = {s: v for s, v in self.names.items()
                    if s not in _OPTIONAL or any(k.startswith(s + "/") for k in stored)}
        problems = []
        for section, variables in sections.items():
            expected = {f"{section}/{name}{_VALUE}": v for name, v in variables.items()}
            missing = [k for k in expected if k not in stored]
            unexpected = [k for k in stored if k.startswith(section + "/") and k not in expected]
            shapes = [f"{k} {stored[k]} != {list(v.shape)}" for k, v in expected.items()
                      if k in stored and list(stored[k]) != list(v.shape)]
            problems += _describe("missing", missing) + _describe("unexpected", unexpected)
            problems += _describe("mis-shaped (checkpoint != model)", shapes)
        if problems:
            raise CheckpointMismatchError(
                f"Checkpoint {path} does not match the model it is restored into: " + "; ".join(problems)
            )
        checkpoint = self.checkpoint if sections.keys() == self.names.keys() else \
            tf.train.Checkpoint(**{s: _nest(v) for s, v in sections.items()})
        status = checkpoint.read(path)
        status.expect_partial()  # sections not asked for (names within sections were checked above)
        status.assert_existing_objects_matched()
        return "named"

    def restore_legacy(self, path):
        """Reads an electra_tf 0.1 checkpoint: weights by their position in the optimizer.

        The model's trainable variables, in `model.trainable_variables` order
        (the order 0.1 built its optimizer with), must match the stored
        positional entries one for one in number and shape; the optimizer's
        variables likewise. Dropout RNG state was not saved by 0.1: it starts
        fresh, with a warning.
        """
        reader = tf.train.load_checkpoint(path)
        _assign_positional(reader, path, ("optimizer", "_trainable_variables"),
                           self.model.trainable_variables, "model weights")
        if self.optimizer is not None:
            _assign_positional(reader, path, ("optimizer", "_variables"), self.optimizer.variables,
                               "optimizer variables")
        logging.warning(
            "%s is an electra_tf 0.1 checkpoint (weights stored by position in the optimizer); "
            "mapped through the optimizer's order and verified against every shape. Dropout RNG "
            "state starts fresh. The next save writes the named format.", path,
        )


def all_finite(variables):
    """True when every float variable holds only finite values."""
    checks = [tf.reduce_all(tf.math.is_finite(tf.convert_to_tensor(v))) for v in variables
              if tf.as_dtype(v.dtype).is_floating]
    return bool(tf.reduce_all(tf.stack(checks)).numpy()) if checks else True


def _optimizer_chain(optimizer):
    while optimizer is not None:
        yield optimizer
        optimizer = getattr(optimizer, "inner_optimizer", None)


def _add(names, name, variable):
    if name in names:
        raise RuntimeError(f"Two variables share the checkpoint name {name!r}: give their layers distinct names.")
    names[name] = variable


class _BackendVariable(trackable_base.Trackable):
    """A Keras variable of the JAX or PyTorch backend in a `tf.train.Checkpoint`, under the key a TensorFlow
    variable has (`<name>/.ATTRIBUTES/VARIABLE_VALUE`): the same files whatever the backend."""

    def __init__(self, variable):
        self.variable = variable

    def _serialize_to_tensors(self):
        return {trackable_base.VARIABLE_VALUE_KEY: tf.convert_to_tensor(keras.ops.convert_to_numpy(self.variable.value))}

    def _restore_from_tensors(self, restored_tensors):
        value = restored_tensors[trackable_base.VARIABLE_VALUE_KEY]
        self.variable.assign(np.asarray(value.numpy(), dtype=keras.backend.standardize_dtype(self.variable.dtype)))


def _trackable(variable):
    """`variable` as a checkpoint holds it: itself on TensorFlow (and a `tf.Variable`), else `_BackendVariable`."""
    if isinstance(variable, keras.Variable) and keras.backend.backend() != "tensorflow":
        return _BackendVariable(variable)
    return variable


def _nest(flat):
    """{"a/b/c": v} -> {"a": {"b": {"c": v}}} (tracked as nested dicts: readable checkpoint keys)."""
    tree = {}
    for name, variable in flat.items():
        variable = _trackable(variable)
        *parents, leaf = name.split("/")
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise RuntimeError(f"Checkpoint name {name!r} nests under a variable.")
        if leaf in node:
            raise RuntimeError(f"Checkpoint name {name!r} is also a layer.")
        node[leaf] = variable
    return tree


def _describe(problem, keys, shown=8):
    if not keys:
        return []
    names = [k.replace(_VALUE, "") for k in sorted(keys)]
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return [f"{len(names)} {problem}: {names[:shown]}{more}"]


def _positional_keys(reader, path, *chain):
    """Checkpoint keys of the list at `chain` in the saved object graph, by list index.

    A variable also reachable elsewhere (0.1 tracked the embeddings under
    `model/`) is stored once under its first path; the object graph says where.
    """
    graph = trackable_object_graph_pb2.TrackableObjectGraph()
    graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    node = graph.nodes[0]
    for name in chain:
        found = [c.node_id for c in node.children if c.local_name == name]
        if not found:
            raise CheckpointMismatchError(f"{path}: no `{'/'.join(chain)}` in its object graph.")
        node = graph.nodes[found[0]]
    keys = {}
    for child in node.children:
        attributes = graph.nodes[child.node_id].attributes
        if child.local_name.isdigit() and attributes:
            keys[int(child.local_name)] = attributes[0].checkpoint_key
    return [keys[i] for i in sorted(keys)]


def _assign_positional(reader, path, chain, variables, what):
    keys = _positional_keys(reader, path, *chain)
    if len(keys) != len(variables):
        raise CheckpointMismatchError(
            f"{path} is an electra_tf 0.1 checkpoint (positional layout) with {len(keys)} {what} where the "
            f"model built from its config.json has {len(variables)}: it cannot be mapped by position. "
            "Load it with the config.json it was trained with (`model_dir/config.json`)."
        )
    values = []
    for i, (key, variable) in enumerate(zip(keys, variables)):
        value = reader.get_tensor(key)
        if tuple(value.shape) != tuple(variable.shape):
            raise CheckpointMismatchError(
                f"{path} (electra_tf 0.1 positional layout): entry {'/'.join(chain)}/{i} ({key}) has shape "
                f"{list(value.shape)} where {variable.path} has {list(variable.shape)}; the model "
                "differs from the one that wrote it. Use the config.json it was trained with."
            )
        values.append(value)
    for variable, value in zip(variables, values):  # only once every shape matched
        variable.assign(np.asarray(value, dtype=variable.dtype))


# A damaged checkpoint: missing or truncated files ("not an sstable", "Read less bytes than requested").
DAMAGE = (tf.errors.OpError, IndexError)


def restore_latest_good(restore, model_dir, damage=DAMAGE):
    """Calls `restore(path)` on the newest readable checkpoint of `model_dir`, falling back over damaged ones.

    A checkpoint that cannot be read (truncated, files missing: `restore` raised one of `damage`) is named
    in a warning and the one before it is tried; a checkpoint that reads but does not fit the model
    (`CheckpointMismatchError`) is an error at once. Keras checkpoints pass their own `damage`
    (`keras_checkpoint.DAMAGE`).

    Returns:
        The restored path, or None when `model_dir` has no checkpoint.

    Raises:
        ValueError naming every damaged checkpoint when none can be read.
    """
    damaged = []
    for path in run_files.kept_checkpoints(model_dir):
        try:
            restore(path)
        except CheckpointMismatchError:
            raise
        except damage as e:
            reason = (getattr(e, "message", None) or str(e) or type(e).__name__).splitlines()[0][:200]
            damaged.append(f"{path} ({reason})")
            logging.warning("Checkpoint %s is unreadable (%s); falling back to the one before it.", path, reason)
            continue
        if damaged:
            logging.warning("Restored %s instead of the damaged %s.", path, "; ".join(damaged))
        return path
    if damaged:
        raise ValueError(f"No readable checkpoint in {os.path.join(model_dir, run_files.CHECKPOINT_DIR)}: "
                         + "; ".join(damaged))
    return None
