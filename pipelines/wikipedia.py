"""Reader for Wikipedia XML dumps (`*-pages-articles*.xml.bz2`), streamed.

Pages are read with `mwxml` and their wikitext parsed with `mwparserfromhell`.
Kept: namespace 0 (articles), not redirects, not disambiguation pages.
Removed: templates (infoboxes, citations, navboxes), `<ref>` and other
non-prose tags, tables, `[[File:]]`/`[[Image:]]`/`[[Category:]]`/interwiki
links, headings, list items, comments, magic words, and everything from a
trailing section such as "References" or "External links" on. Links keep their
text. Each remaining paragraph is sentence-split; an article is one document.
"""

import re
import xml.etree.ElementTree as ElementTree

import mwparserfromhell
import mwxml

from electra_tf.pipelines import sentences as sentences_lib
from electra_tf.pipelines import text_io

# Template names (lower case) that mark a disambiguation page.
DISAMBIGUATION_TEMPLATES = frozenset(
    "disambiguation disambig disamb dab hndis geodis numberdis letter-numbercombdisambig "
    "mathdab schooldis shipindex roaddis".split()
)
# Tags whose content is not prose.
DROPPED_TAGS = frozenset(
    "ref references table gallery math chem code pre source syntaxhighlight timeline "
    "imagemap score graph mapframe templatedata nowiki noinclude includeonly".split()
)
# Link namespaces that are not running text.
DROPPED_LINK_PREFIXES = ("file:", "image:", "media:", "category:", "wikipedia:", "wp:",
                         "help:", "template:", "portal:", "special:", "wikt:", "s:")
_INTERWIKI = re.compile(r"^:?[a-z]{2,3}(-[a-z]+)?:")
_STOP_SECTION = re.compile(
    r"^=+\s*(references|external links|see also|further reading|notes|bibliography|"
    r"sources|footnotes|citations|notes and references)\s*=+\s*$",
    re.IGNORECASE | re.MULTILINE,
)
_MAGIC_WORD = re.compile(r"__[A-Z]+__")
_EMPTY_BRACKETS = re.compile(r"\(\s*(?:(?:see|cf\.?|also)\s*)*[,;:]?\s*\)", re.IGNORECASE)
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?])")
MIN_PARAGRAPH_WORDS = 4


def is_disambiguation(title, wikicode):
    """True for a disambiguation page (by title or template)."""
    if title.strip().lower().endswith("(disambiguation)"):
        return True
    for template in wikicode.filter_templates(recursive=False):
        name = str(template.name).strip().lower().replace("_", " ")
        if name in DISAMBIGUATION_TEMPLATES or name.endswith("disambiguation"):
            return True
    return False


def _drop_node(node):
    if isinstance(node, (mwparserfromhell.nodes.Template, mwparserfromhell.nodes.Heading,
                         mwparserfromhell.nodes.Comment, mwparserfromhell.nodes.Argument)):
        return True
    if isinstance(node, mwparserfromhell.nodes.Tag):
        tag = str(node.tag).strip().lower()
        return tag in DROPPED_TAGS or tag in ("li", "dt", "dd")
    if isinstance(node, mwparserfromhell.nodes.Wikilink):
        title = str(node.title).strip().lower()
        return title.startswith(DROPPED_LINK_PREFIXES) or bool(_INTERWIKI.match(title))
    return False


def _remove_nodes(wikicode):
    """Removes non-prose nodes, outermost first (children go with their parent)."""
    for node in list(wikicode.nodes):
        if _drop_node(node):
            wikicode.remove(node)
            continue
        for attr in ("contents", "text"):  # formatting tags (<b>, <i>) and link texts
            child = getattr(node, attr, None)
            if isinstance(child, mwparserfromhell.wikicode.Wikicode):
                _remove_nodes(child)


def wikitext_to_sentences(title, text):
    """Cleans one article's wikitext into sentences.

    Args:
        title: str. Page title (for the disambiguation check).
        text: str. The wikitext.

    Returns:
        list of str sentences, or None for a disambiguation page.

    Example:
        >>> from electra_tf.pipelines.wikipedia import wikitext_to_sentences
        >>> wikitext_to_sentences("Ada", "'''Ada''' was a [[England|English]] "
        ...     "writer.<ref>A source.</ref> She wrote notes on the engine.")
        ['Ada was a English writer.', 'She wrote notes on the engine.']
    """
    stop = _STOP_SECTION.search(text)
    if stop:
        text = text[: stop.start()]
    # Lists, indents and table rows are not running text: drop those lines before parsing
    # (`* item`, `# item`, `; term`, `: indent`, `| cell`, `! header`).
    lines = [ln for ln in text.split("\n") if not ln.lstrip().startswith(("*", "#", ";", ":", "|", "!"))]
    wikicode = mwparserfromhell.parse("\n".join(lines))
    if is_disambiguation(title, wikicode):
        return None
    _remove_nodes(wikicode)
    plain = wikicode.strip_code(normalize=True, collapse=True)
    plain = _MAGIC_WORD.sub("", plain)
    result = []
    for paragraph in plain.split("\n"):
        paragraph = _EMPTY_BRACKETS.sub("", paragraph)
        paragraph = _SPACE_BEFORE_PUNCT.sub(r"\1", sentences_lib.normalize_whitespace(paragraph))
        if len(paragraph.split()) < MIN_PARAGRAPH_WORDS:
            continue
        result.extend(sentences_lib.split_sentences(paragraph))
    return result


def read_wikipedia_dump(path, key, source="wikipedia"):
    """Streams the articles of a MediaWiki XML dump as documents.

    Args:
        path: str. A `*-pages-articles*.xml.bz2` (or `.xml`, `.xml.gz`) dump.
        key: str. Stable file key; documents get `<key>:<page id>`.
        source: str. Source label stored in each document.

    Yields:
        `text_io.Document`s, one per article with text left after cleaning.

    Raises:
        `text_io.CorruptInputError` naming the file and position when the
        compressed stream or the XML is truncated or corrupt.

    Example:
        ```python
        import bz2

        from electra_tf.pipelines.wikipedia import read_wikipedia_dump

        with bz2.open("enwiki-latest-pages-articles1.xml.bz2", "wt") as f:
            f.write(
                '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10">'
                '<siteinfo><namespaces><namespace key="0" case="first-letter" /></namespaces></siteinfo>'
                '<page><title>Ada</title><ns>0</ns><id>7</id><revision><id>1</id>'
                "<text>'''Ada''' was an English [[mathematician]]. She wrote notes.</text>"
                '</revision></page></mediawiki>'
            )
        for doc in read_wikipedia_dump("enwiki-latest-pages-articles1.xml.bz2", "enwiki1"):
            print(doc.key, doc.sentences[0])  # enwiki1:7 Ada was an English mathematician.
        ```
    """
    with text_io.CompressedReader(path) as reader:
        last = "before the first page"
        try:
            dump = mwxml.Dump.from_file(reader.file)
            for page in dump:
                last = f"after page {page.id} {page.title!r}"
                text = None
                for revision in page:  # pages-articles dumps hold the latest revision only
                    text = revision.text
                if page.namespace != 0 or page.redirect or not text:
                    continue
                if text.lstrip().lower().startswith("#redirect"):
                    continue
                sentences = wikitext_to_sentences(page.title, text)
                if sentences:
                    invalid = text.count("\ufffd")
                    yield text_io.Document(
                        f"{key}:{page.id}", source, sentences, invalid, len(text.encode("utf-8"))
                    )
        except (ElementTree.ParseError, *reader.ERRORS) as err:
            raise reader.error(err, last) from err
        except Exception as err:  # mwxml wraps some XML errors in its own types
            if isinstance(err, text_io.CorruptInputError):
                raise
            raise reader.error(err, last) from err
