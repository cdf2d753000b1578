"""The pre-training objectives, as data: the one registry (paper section 3.2 and Table 5).

`ElectraConfig` validates `objective` against `OBJECTIVES`, `ElectraPretrainer`
builds its heads and metrics from the entry, and `training.flops` counts from it.
"""

import typing


class Objective(typing.NamedTuple):
    """What an objective trains.

    Attributes:
        generator: bool. A small MLM generator replaces the chosen tokens with samples.
        task: str. What the discriminator-sized encoder learns from its input:
            "rtd" replaced-token detection on every real token, "rtd_chosen"
            only on the chosen 15 %, "mlm" the original token at the chosen
            positions, "mlm_all" the original token at every real position.
    """

    generator: bool
    task: str

    @property
    def detects_replacements(self):
        """True for replaced-token detection (a discriminator head, AUC metrics); False for an MLM head."""
        return self.task.startswith("rtd")


# In this order in help texts and error messages; "mlm" is the BERT baseline.
OBJECTIVES = {
    "electra": Objective(generator=True, task="rtd"),
    "mlm": Objective(generator=False, task="mlm"),
    "electra_15": Objective(generator=True, task="rtd_chosen"),
    "replace_mlm": Objective(generator=True, task="mlm"),
    "all_tokens_mlm": Objective(generator=True, task="mlm_all"),
}


def get_objective(name):
    """The `Objective` called `name`; a `ValueError` naming the choices for any other name."""
    if name not in OBJECTIVES:
        raise ValueError(f"Unknown `objective={name!r}`. Choose one of {list(OBJECTIVES)}.")
    return OBJECTIVES[name]
