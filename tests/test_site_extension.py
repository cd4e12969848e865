"""_ext/sxor_site.py: one copy of each script, one search box, the placeholder banner, figure
alt text from the captions."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

from docutils import nodes

ROOT = Path(__file__).resolve().parents[1]


def extension():
    spec = importlib.util.spec_from_file_location("sxor_site", ROOT / "_ext" / "sxor_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_banner_only_while_the_repository_is_the_placeholder():
    ext = extension()
    from tools.set_repository import PLACEHOLDER

    assert ext.placeholder_url() == PLACEHOLDER
    config = SimpleNamespace(html_theme_options={"repository_url": PLACEHOLDER})
    ext.placeholder_banner(None, config)
    assert "placeholder" in config.html_theme_options["announcement"]
    published = SimpleNamespace(
        html_theme_options={"repository_url": "https://github.com/someone/book"}
    )
    ext.placeholder_banner(None, published)
    assert "announcement" not in published.html_theme_options


def test_one_search_box():
    ext = extension()
    config = SimpleNamespace(
        html_theme_options={"navbar_persistent": ["search-button-field"]}, html_sidebars={}
    )
    ext.one_search_box(None, config)
    assert config.html_theme_options["navbar_persistent"] == []
    assert [name for name in config.html_sidebars["**"] if "search" in name] == [
        "search-button-field.html"
    ]


def test_scripts_registered_twice_appear_once():
    from sphinx.builders.html._assets import _JavaScript

    ext = extension()
    body = 'const THEBE_JS_URL = "x"'
    # as Jupyter Book registers them: once with no file name, once with an empty one
    scripts = [
        _JavaScript(None, body=body, priority=500),
        _JavaScript("a.js"),
        _JavaScript("", body=body),
        _JavaScript("a.js"),
        _JavaScript(None, body="other"),
    ]
    context = {"script_files": scripts}
    ext.dedupe_scripts(None, "page", "page.html", context, None)
    assert [s.attributes.get("body", s.filename) for s in context["script_files"]] == [
        body,
        "a.js",
        "other",
    ]


def test_alt_text_from_the_caption():
    ext = extension()
    doctree = nodes.document(None, None)
    figure = nodes.figure()
    image = nodes.image(uri="_images/abc.png", alt="_images/abc.png")
    kept = nodes.image(uri="b.png", alt="A drawing of the sphere")
    figure += [
        image,
        kept,
        nodes.caption(text=r"Success rate against \eta/d^2 at $m = \mathrm{3}$."),
    ]
    doctree += figure
    ext.alt_from_captions(None, doctree, "page")
    assert image["alt"] == "Success rate against eta/d^2 at m = 3."
    assert kept["alt"] == "A drawing of the sphere"
