"""tools/check_site.py finds directive text shown as prose and an exercise with two solutions."""

from __future__ import annotations

import pytest

from tools import check_site

PAGE = """<html><head><title>1. Plain</title></head><body>
<article class="bd-article">{body}</article></body></html>"""

SOLUTION = (
    '<div class="solution dropdown admonition" id="s{n}"><p class="admonition-title">Solution to'
    '<a class="reference internal" href="#{ex}"> Exercise 16.2</a></p><section><p>ok</p></section></div>'
)


def problems_of(tmp_path, body: str) -> list[str]:
    page = tmp_path / "page.html"
    page.write_text(PAGE.format(body=body))
    problems: list[str] = []
    check_site.check_page(page, tmp_path, problems)
    return problems


@pytest.mark.parametrize(
    "prose",
    [
        "<p>```{prf:proof} of <a href='#thm'>Theorem 13.1</a></p>",
        "<p>as {prf:ref}`thm-13-hardmax` shows</p>",
        "<p>see {ref}`part2-sources`</p>",
        "<p>:::{note}</p>",
        "<p>Theorem\n:label: thm-13-hardmax\nmore</p>",
        "<p>~~~{exercise} x</p>",
    ],
)
def test_directive_text_in_prose_is_a_problem(tmp_path, prose):
    found = problems_of(tmp_path, prose)
    assert any("MyST syntax shown as text" in p for p in found), found


@pytest.mark.parametrize(
    "body",
    [
        "<pre>```{prf:proof}\n:label: x\n```</pre>",  # a code block shows syntax on purpose
        '<p>write <code class="docutils literal">{prf:ref}`label`</code></p>',
        '<div class="highlight"><span>```{exercise}</span></div>',
        "<p>a set {x} and a dict {'a': 1}; the ratio 3:2; label: none</p>",
        '<p>Proof of <a href="#thm">Theorem 13.1</a>: by induction.</p>',
    ],
)
def test_code_and_ordinary_prose_pass(tmp_path, body):
    assert not [p for p in problems_of(tmp_path, body) if "MyST" in p]


def test_an_exercise_with_two_solutions_is_a_problem(tmp_path):
    one_each = SOLUTION.format(n=1, ex="ex-16-a") + SOLUTION.format(n=2, ex="ex-16-b")
    assert not [p for p in problems_of(tmp_path, one_each) if "solutions" in p]
    two = SOLUTION.format(n=1, ex="ex-16-a") + SOLUTION.format(n=2, ex="ex-16-a")
    found = problems_of(tmp_path, two)
    assert any("2 solutions to the exercise #ex-16-a" in p for p in found), found
