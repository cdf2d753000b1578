"""Every figure of the README and the guides links a committed source (`benchmarks.figure_sources`)."""

from benchmarks import figure_sources


def test_every_figure_has_a_committed_source():
    found = [f for page in figure_sources.pages() for f in figure_sources.figures(page)]
    assert len(found) > 100  # the pages hold their figures, and the detector sees them
    unsourced = [f"{f.page}:{f.line} {f.text} (missing: {f.missing})" for f in found if not f.sourced]
    assert not unsourced, "figures without a linked source (python -m benchmarks.figure_sources):\n" + "\n".join(unsourced)


PAGE = """# A page

TensorFlow 2.21 and SQuAD 1.1 / 2.0 on 127.0.0.1, `--learning_rate 1e-4`, 3 seeds, 12 layers.

It runs at 0.674 steps/s, 1.48x the peer, 73 % of the tokenizer
([report](results/report.md)).

Unsourced: 104 ms and 3,000 questions, 75.5 ± 0.5; a [missing](results/nowhere.md) 6.0e13.

| side | F1 |
|---|---:|
| ours | 40.0 |

<!-- test: 9.99 -->
```bash
python -m x --rate 0.5
```
"""


def test_figures_are_found_and_sourced_by_the_links_of_their_paragraph(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "report.md").write_text("measured\n")
    page = tmp_path / "page.md"
    page.write_text(PAGE)
    figures = {f.text: f for f in figure_sources.figures(page)}
    assert set(figures) == {"0.674 steps/s", "1.48x", "73 %", "104 ms", "3,000", "75.5 ± 0.5", "6.0e13", "40.0"}
    assert all(figures[t].sourced for t in ("0.674 steps/s", "1.48x", "73 %"))
    assert [figures[t].sources for t in ("0.674 steps/s",)] != [[]]
    assert not any(figures[t].sourced for t in ("104 ms", "3,000", "75.5 ± 0.5", "6.0e13", "40.0"))
    assert figures["6.0e13"].missing  # a link to a file that does not exist is no source


def test_a_table_row_is_sourced_by_its_caption(tmp_path):
    (tmp_path / "r.md").write_text("x\n")
    page = tmp_path / "page.md"
    page.write_text("Caption ([r](r.md)):\n\n| a | b |\n|---|---|\n| x | 1.5 |\n")
    (figure,) = figure_sources.figures(page)
    assert figure.text == "1.5" and figure.sourced
