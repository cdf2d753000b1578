"""Presets: one file each, a `CONFIG` dict of the fields that differ from `ElectraConfig`.

Load one with `electra_tf.config.get_config("small")`; "small++" is the file `small_pp.py`.
"""
