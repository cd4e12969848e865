"""Bibliography labels in the text's author-year style.

The text cites as "Han and Ghoshdastidar, 2025a" (sphinxcontrib-bibtex's ``author_year``
reference style); the default bibliography labels would be alpha codes such as ``[HG25a]``.
This extension registers a pybtex style, ``sxor_author_year``, whose labels are the same
author-year strings, so a reader finds the cited entry by what the text says. Works that would
share a label (same authors, same year) carry the letter in their BibTeX ``year`` field
(``2025a``, ``2025b``), so the text and the list agree without guessing.
"""

from __future__ import annotations

import re

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle


def _last_name(person) -> str:
    return re.sub(r"[{}]", "", " ".join(person.prelast_names + person.last_names))


def author_year_label(entry) -> str:
    """``Last, year``, ``Last and Last, year`` or ``Last et al., year``, as the text cites."""
    persons = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_last_name(p) for p in persons]
    if not names:
        who = entry.fields.get("title", entry.key)
    elif len(names) == 1:
        who = names[0]
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    else:
        who = f"{names[0]} et al."
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabels(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            yield author_year_label(entry)


class AuthorYearStyle(UnsrtStyle):
    default_sorting_style = "author_year_title"
    default_label_style = "sxor_author_year"


def setup(app):
    register_plugin("pybtex.style.labels", "sxor_author_year", AuthorYearLabels, force=True)
    register_plugin("pybtex.style.formatting", "sxor_author_year", AuthorYearStyle, force=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
