"""Every docstring example of the span-QA modules runs and prints what it shows."""

import doctest

import pytest

from electra_tf.tasks.span_qa import features as qa_features

from electra_tf.tasks.span_qa import metrics as qa_metrics

from electra_tf.tasks.span_qa import squad
from electra_tf.tasks.span_qa import model as question_answerer


@pytest.mark.parametrize("module", [squad, qa_features, qa_metrics, question_answerer], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
