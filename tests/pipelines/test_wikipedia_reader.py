"""Wikipedia dump reader: prose in, markup and non-article pages out, truncation reported."""

import bz2

import pytest

from electra_tf.pipelines import text_io
from electra_tf.pipelines import wikipedia

PAGE = """  <page>
    <title>{title}</title>
    <ns>{ns}</ns>
    <id>{id}</id>{redirect}
    <revision>
      <id>{rev}</id>
      <timestamp>2024-01-01T00:00:00Z</timestamp>
      <contributor><username>Bot</username><id>1</id></contributor>
      <model>wikitext</model>
      <format>text/x-wiki</format>
      <text bytes="{size}" xml:space="preserve">{text}</text>
      <sha1>abc</sha1>
    </revision>
  </page>
"""

HEADER = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" xml:lang="en">
  <siteinfo>
    <sitename>Wikipedia</sitename>
    <dbname>enwiki</dbname>
    <base>https://en.wikipedia.org/wiki/Main_Page</base>
    <generator>MediaWiki 1.42</generator>
    <case>first-letter</case>
    <namespaces>
      <namespace key="0" case="first-letter" />
      <namespace key="1" case="first-letter">Talk</namespace>
      <namespace key="6" case="first-letter">File</namespace>
      <namespace key="14" case="first-letter">Category</namespace>
    </namespaces>
  </siteinfo>
"""

ADA = """{{Short description|English mathematician}}
{{Infobox scientist
| name = Ada Lovelace
| birth_date = {{birth date|1815|12|10}}
}}
'''Augusta Ada King, Countess of Lovelace''' (10 December 1815 – 27 November 1852) was an English [[mathematician]] and writer.<ref name="bbc">{{cite web |url=https://www.bbc.co.uk/ada |title=Ada Lovelace |publisher=BBC}}</ref> She is chiefly known for her work on [[Charles Babbage]]'s proposed mechanical general-purpose computer, the [[Analytical Engine]].<ref>Fuegi, J. Lovelace and Babbage. 2003.</ref>

[[File:Ada Lovelace portrait.jpg|thumb|left|Portrait of Ada by [[Alfred Edward Chalon]].]]

== Early life ==
Ada was the only legitimate child of the poet [[Lord Byron]] and the reformer [[Anne Isabella Milbanke|Anne Isabella Byron]].{{sfn|Turney|1972|p=35}} Her mother promoted her interest in mathematics and logic.<!-- hidden editor note -->

{| class="wikitable"
|-
! Year !! Event
|-
| 1833 || Meets Babbage
|}

== Legacy ==
Ada Lovelace Day is celebrated every October.__NOTOC__

== References ==
{{Reflist}}

== External links ==
* [https://example.org Official website]

[[Category:English mathematicians]]
[[Category:1815 births]]
[[de:Ada Lovelace]]
"""

ENGINE = """The '''Analytical Engine''' was a proposed mechanical general-purpose computer designed by [[Charles Babbage]].<ref>Babbage 1864.</ref> It was first described in 1837 as the successor to the [[Difference Engine]].
{{Main|History of computing}}
The engine would have had an arithmetic logic unit and integrated memory.
"""

REDIRECT = "#REDIRECT [[Ada Lovelace]] {{R from alternative name}}"
DISAMBIGUATION = """'''Mercury''' may refer to:
* [[Mercury (planet)]], the closest planet to the Sun
* [[Mercury (element)]], a chemical element
{{Disambiguation}}
"""
TALK = "This talk page discusses improvements to the article about engines and history."


def _escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _dump(pages):
    body = "".join(
        PAGE.format(
            title=title, ns=ns, id=i + 10, rev=i + 100, size=len(text),
            redirect=f'\n    <redirect title="{redirect}" />' if redirect else "", text=_escape(text),
        )
        for i, (title, ns, redirect, text) in enumerate(pages)
    )
    return (HEADER + body + "</mediawiki>\n").encode("utf-8")


PAGES = [
    ("Ada Lovelace", 0, None, ADA),
    ("Lady Lovelace", 0, "Ada Lovelace", REDIRECT),
    ("Mercury", 0, None, DISAMBIGUATION),
    ("Talk:Analytical Engine", 1, None, TALK),
    ("Analytical Engine", 0, None, ENGINE),
]


@pytest.fixture
def dump_path(tmp_path):
    path = tmp_path / "enwiki-20240101-pages-articles1.xml.bz2"
    path.write_bytes(bz2.compress(_dump(PAGES)))
    return str(path)


def test_extracts_article_prose_only(dump_path):
    docs = list(wikipedia.read_wikipedia_dump(dump_path, key="enwiki1"))
    assert [d.key for d in docs] == ["enwiki1:10", "enwiki1:14"]  # no redirect, disambiguation, talk
    ada = docs[0].sentences
    text = " ".join(s for d in docs for s in d.sentences)
    # Prose survives, links keep their label, sentences are split.
    assert ada[0] == (
        "Augusta Ada King, Countess of Lovelace (10 December 1815 – 27 November 1852) "
        "was an English mathematician and writer."
    )
    assert "She is chiefly known for her work on Charles Babbage's proposed mechanical " \
           "general-purpose computer, the Analytical Engine." in ada
    assert "Ada was the only legitimate child of the poet Lord Byron and the reformer Anne Isabella Byron." in ada
    assert "Her mother promoted her interest in mathematics and logic." in ada
    assert "Ada Lovelace Day is celebrated every October." in ada
    assert "The engine would have had an arithmetic logic unit and integrated memory." in docs[1].sentences
    # No markup, templates, refs, tables, files, categories, headings, interwiki, comments.
    for fragment in ("{{", "}}", "[[", "]]", "<ref", "cite web", "Fuegi", "Infobox", "birth date",
                     "wikitable", "Meets Babbage", "Portrait of Ada", "thumb", "Category", "1815 births",
                     "de:", "Early life", "References", "Reflist", "Official website", "hidden editor",
                     "NOTOC", "sfn", "Turney", "Short description", "History of computing", "'''", "|"):
        assert fragment not in text, fragment
    # Non-article pages are gone.
    for fragment in ("may refer to", "closest planet", "talk page", "REDIRECT"):
        assert fragment not in text, fragment


@pytest.mark.parametrize("cut", [0.5, 0.97])
def test_truncated_dump_names_file_and_position(tmp_path, cut):
    data = bz2.compress(_dump(PAGES * 20))
    path = tmp_path / "enwiki-pages-articles-truncated.xml.bz2"
    path.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(text_io.CorruptInputError) as info:
        list(wikipedia.read_wikipedia_dump(str(path), key="k"))
    message = str(info.value)
    assert str(path) in message and "byte" in message


def test_truncated_xml_in_complete_bz2(tmp_path):
    xml = _dump(PAGES)
    path = tmp_path / "enwiki-pages-articles-cut.xml.bz2"
    path.write_bytes(bz2.compress(xml[: len(xml) - 300]))  # valid bz2, XML cut mid-page
    with pytest.raises(text_io.CorruptInputError, match="pages-articles-cut"):
        list(wikipedia.read_wikipedia_dump(str(path), key="k"))
