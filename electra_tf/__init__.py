"""ELECTRA pre-training, fine-tuning and serving on TensorFlow 2 / Keras 3.

The repository keeps `configs/` (presets) and `pipelines/` (data tools) as
top-level folders beside `electra_tf/`; they are parts of this package,
`electra_tf.configs` and `electra_tf.pipelines`. An installed copy holds them
inside the package (`setup.py`, `package_dir`). A source tree (the repository
on `sys.path`, as `python -m ...` or `pytest` from its root, or `pip install -e`)
does not, so `_map_source_folders` registers those two folders, and only them,
as the subpackages. Their `__init__.py` files are docstrings only: mapping costs
no import.

Importing the package registers, for Keras, every class a saved electra_tf model names
(`electra_tf.saved_classes`), so `import electra_tf, keras; keras.saving.load_model(path)`
restores any `.keras` file electra_tf writes, compiled optimizer included, as keras-hub's models
load. TensorFlow and Keras are not imported here (the programs set their environment before
that): once Keras is imported, its look-up of a registered name learns to import
`electra_tf.saved_classes` the first time it misses a name of the `electra_tf>` package.
"""

import importlib.abc
import importlib.util
import os
import sys

__version__ = "0.1.0"

SOURCE_FOLDERS = ("configs", "pipelines")  # repository folders that are subpackages of `electra_tf`


def _map_source_folders():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    for name in SOURCE_FOLDERS:
        full_name = f"{__name__}.{name}"
        folder = os.path.join(root, name)
        init = os.path.join(folder, "__init__.py")
        if full_name in sys.modules or os.path.isdir(os.path.join(here, name)) or not os.path.isfile(init):
            continue  # already imported, installed inside the package, or not a source tree
        spec = importlib.util.spec_from_file_location(full_name, init, submodule_search_locations=[folder])
        module = importlib.util.module_from_spec(spec)
        sys.modules[full_name] = module
        spec.loader.exec_module(module)
        globals()[name] = module


_map_source_folders()

SAVED_CLASSES_MODULE = f"{__name__}.saved_classes"
_PACKAGE_PREFIX = f"{__name__}>"  # how `keras.saving.register_keras_serializable(package="electra_tf")` names


def _find_saved_classes_in_keras():
    """Makes Keras' registered-object look-up import `saved_classes` on a miss of an `electra_tf>` name."""
    try:
        from keras.src.saving import object_registration
    except ImportError:  # another Keras layout: `import electra_tf.saved_classes` registers them
        return
    original = getattr(object_registration, "get_registered_object", None)
    if original is None or getattr(original, "imports_electra_tf", False):
        return  # another Keras layout, or taught already

    def get_registered_object(name, custom_objects=None, module_objects=None):
        found = original(name, custom_objects, module_objects)
        if found is None and isinstance(name, str) and name.startswith(_PACKAGE_PREFIX) \
                and SAVED_CLASSES_MODULE not in sys.modules:
            importlib.import_module(SAVED_CLASSES_MODULE)
            found = original(name, custom_objects, module_objects)
        return found

    get_registered_object.imports_electra_tf = True
    object_registration.get_registered_object = get_registered_object


class _AfterKeras(importlib.abc.MetaPathFinder):
    """Finds `keras` as the other finders do, and teaches it `_find_saved_classes_in_keras` once it has run."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "keras":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenFindSavedClasses(spec.loader)
        return spec


class _ThenFindSavedClasses(importlib.abc.Loader):
    def __init__(self, loader):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        _find_saved_classes_in_keras()

    def __getattr__(self, name):  # resources, source, file name: the wrapped loader's
        return getattr(self.loader, name)


if "keras" in sys.modules:
    _find_saved_classes_in_keras()
elif not any(isinstance(finder, _AfterKeras) for finder in sys.meta_path):
    sys.meta_path.insert(0, _AfterKeras())
