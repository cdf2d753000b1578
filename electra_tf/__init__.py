"""ELECTRA pre-training, fine-tuning and serving on TensorFlow 2 / Keras 3.

The repository keeps `configs/` (presets) and `pipelines/` (data tools) as
top-level folders beside `electra_tf/`; they are parts of this package,
`electra_tf.configs` and `electra_tf.pipelines`. An installed copy holds them
inside the package (`setup.py`, `package_dir`). A source tree (the repository
on `sys.path`, as `python -m ...` or `pytest` from its root, or `pip install -e`)
does not, so `_map_source_folders` registers those two folders, and only them,
as the subpackages. Their `__init__.py` files are docstrings only: mapping costs
no import.
"""

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
