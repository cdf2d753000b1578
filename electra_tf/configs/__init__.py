"""`electra_tf.configs` in a source tree: the repository's top-level `configs/` folder (an installed copy holds it here)."""

import os

__path__ = [os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "configs")]
