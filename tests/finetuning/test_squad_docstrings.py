"""Every docstring example of the span-QA modules runs and prints what it shows."""

import doctest

import pytest

from electra_tf.finetuning import qa_features, qa_metrics, squad
from electra_tf.models import question_answerer


@pytest.mark.parametrize("module", [squad, qa_features, qa_metrics, question_answerer], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
