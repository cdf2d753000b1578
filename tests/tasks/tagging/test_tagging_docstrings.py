"""Every docstring example of the tagging kind's CoNLL reader, features and metrics runs and prints what it shows."""

import doctest

import pytest

from electra_tf.tasks.tagging import conll

from electra_tf.tasks.tagging import features as tagging_features

from electra_tf.tasks.tagging import metrics as tagging_metrics
@pytest.mark.parametrize("module", [conll, tagging_features, tagging_metrics], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
