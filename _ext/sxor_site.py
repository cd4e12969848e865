"""What the website needs beyond the theme: one copy of each script, one search box, a banner
while the repository URL is the placeholder, figure alt text from the captions, and widget
explorers shown as their static view (no widget scripts from another host).

* sphinx-thebe and sphinx-togglebutton register their inline configuration scripts twice under
  Jupyter Book, so every page threw ``Identifier 'THEBE_JS_URL' has already been declared``:
  :func:`dedupe_scripts` keeps the first copy of each script.
* The theme shows a search field in the header and another in the sidebar: the sidebar keeps
  its field (:data:`SIDEBAR`), the header none.
* :func:`placeholder_banner`: while ``repository.url`` in ``_config.yml`` is the placeholder of
  ``tools/set_repository.py``, every page says so in a banner (the Colab and repository buttons
  point there).
* :func:`html_handlers_for_every_html_builder`: extensions that register their nodes for the
  ``html`` builder only (sphinx-proof's definitions) break the single-page build that ``make pdf``
  prints; every HTML builder gets the ``html`` handlers it lacks.
* :func:`alt_from_captions`: an image in a numbered figure gets its caption as alt text (myst-nb
  and the ``{figure}`` directive leave the file path otherwise).
* :func:`cited_titles`: a result cited from a paper (``:nonumber:`` and ``:class: sxor-cited``)
  is titled by the paper's own number ("Theorem 2 of Han and Ghoshdastidar: ..."), with no
  number of the book's: its title loses the parentheses sphinx-proof puts around it, and
  ``_static/sxor.css`` hides the bare "Theorem" that sphinx-proof writes before it.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from docutils import nodes

ROOT = Path(__file__).resolve().parents[1]
#: The primary sidebar: the book's logo and title, one search field, the navigation.
SIDEBAR = ["navbar-logo.html", "search-button-field.html", "sbt-sidebar-nav.html"]


def placeholder_url() -> str:
    """``PLACEHOLDER`` of ``tools/set_repository.py`` (the one definition of it)."""
    spec = importlib.util.spec_from_file_location(
        "_set_repository", ROOT / "tools" / "set_repository.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.PLACEHOLDER


def banner_text(url: str) -> str:
    return (
        "Preview edition: the repository address is a placeholder until the book is published; "
        "the Colab and repository buttons do not work yet."
    )


def placeholder_banner(app, config) -> None:
    options = config.html_theme_options
    url = str(options.get("repository_url", "")).rstrip("/")
    if url and url == placeholder_url().rstrip("/") and not options.get("announcement"):
        options["announcement"] = banner_text(url)


def one_search_box(app, config) -> None:
    config.html_theme_options["navbar_persistent"] = []
    config.html_sidebars = {"**": list(SIDEBAR)}


def dedupe_scripts(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        # The copies differ in how their empty file name is spelt (None or ""): compare file
        # names, empty or not, and attributes.
        attributes = getattr(script, "attributes", {})
        key = (
            getattr(script, "filename", str(script)) or "",
            tuple(sorted((k, str(v)) for k, v in attributes.items() if k != "priority")),
        )
        if key not in seen:
            seen.add(key)
            kept.append(script)
    scripts[:] = kept


def plain_text(caption: str) -> str:
    """A caption as alt text: one line, TeX commands and braces dropped (``\\eta/d^2`` reads
    ``eta/d^2``)."""
    text = re.sub(
        r"\\(mathrm|mathbf|mathbb|mathcal|mathit|boldsymbol|text|operatorname|left|right|"
        r"big|Big|bigl|bigr|Bigl|Bigr|displaystyle)\b",
        "",
        caption,
    )
    text = re.sub(r"\\([A-Za-z]+)", r"\1", text)
    text = re.sub(r"[{}$\\]", "", text)
    return " ".join(text.split())


def alt_from_captions(app, doctree, docname) -> None:
    for figure in doctree.findall(nodes.figure):
        captions = list(figure.findall(nodes.caption))
        if not captions:
            continue
        text = plain_text(captions[0].astext())
        for image in figure.findall(nodes.image):
            alt = image.get("alt", "")
            if (
                not alt
                or alt == image.get("uri")
                or "/" in alt
                or alt.endswith((".png", ".svg", ".jpg"))
            ):
                image["alt"] = text


def cited_titles(app, doctree) -> None:
    for node in doctree.findall(nodes.Element):
        if "sxor-cited" not in node.get("classes", []) or not node.children:
            continue
        title = node.children[0]
        if not isinstance(title, nodes.title) or not title.children:
            continue
        first, last = title.children[0], title.children[-1]
        if isinstance(first, nodes.Text) and first.astext().startswith(" ("):
            title.replace(first, nodes.Text(first.astext()[2:]))
        last = title.children[-1]
        if isinstance(last, nodes.Text) and last.astext().endswith(")"):
            title.replace(last, nodes.Text(last.astext()[:-1]))


def html_handlers_for_every_html_builder(app) -> None:
    builder = app.builder
    if builder.format != "html" or builder.name == "html":
        return
    handlers = app.registry.translation_handlers
    mine = handlers.setdefault(builder.name, {})
    for node, visitors in handlers.get("html", {}).items():
        mine.setdefault(node, visitors)


def setup(app):
    app.connect("builder-inited", html_handlers_for_every_html_builder)
    app.connect("config-inited", placeholder_banner)
    app.connect("config-inited", one_search_box)
    app.connect("html-page-context", dedupe_scripts, priority=900)
    app.connect("doctree-resolved", alt_from_captions)
    app.connect("doctree-read", cited_titles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
