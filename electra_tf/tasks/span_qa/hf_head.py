"""A fine-tuned question answerer's head as transformers' `ElectraForQuestionAnswering` (`convert --to hf`).

The logits equal the Keras model's (its logits before the -1000 mask outside the context, which
transformers leaves to post-processing). Two heads cannot be expressed and are refused with the reason:
the official QA head (end logits conditioned on the start, a beam; transformers' head is start and end
independent) and the SQuAD 2.0 answerability classifier.
"""

from electra_tf.converting.hf_heads import dense_weights

def question_answerer_head(model):
    """`ElectraForQuestionAnswering`'s head from a simple-head `ElectraQuestionAnswerer`; the others are refused."""
    if model.head != "simple":
        raise ValueError("The official QA head cannot be written as ElectraForQuestionAnswering: its end logits "
                         "are conditioned on the start (a dense layer over [h_start; h_end] and a beam), while "
                         "transformers' head scores start and end independently. Fine-tune with "
                         "--qa_head simple to export to Hugging Face.")
    if model.answerable:
        raise ValueError("The SQuAD 2.0 answerability classifier has no place in ElectraForQuestionAnswering "
                         "(transformers scores no-answer at [CLS]); fine-tune without it to export to Hugging Face.")
    kernel, bias = dense_weights(model.span_dense)
    return ("ElectraForQuestionAnswering", {"qa_outputs.weight": kernel.T, "qa_outputs.bias": bias},
            {"num_labels": 2})
