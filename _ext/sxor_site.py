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
* :func:`colab_editions`: the Colab button opens the Colab edition of the page (plain Markdown with
  the website's numbers, ``tools/colab.py``), and a page with exercises also offers "exercises
  only (Colab)", the edition without solutions. Both are links a reader follows, not loads.
* :func:`edition_footer` and :func:`edition_on_title_page`: every page's footer, and the first page
  of the PDF (the root document of the single-page build), name the version (``sxor/_version.py``)
  and the commit the book was built from (``git rev-parse --short HEAD``; "unknown" outside git).
  The licences are in ``html.extra_footer`` of ``_config.yml``; the version line follows them.
* :func:`cited_titles`: a result cited from a paper (``:nonumber:`` and ``:class: sxor-cited``)
  is titled by the paper's own number ("Theorem 2 of Han and Ghoshdastidar: ..."), with no
  number of the book's: its title loses the parentheses sphinx-proof puts around it, and
  ``_static/sxor.css`` hides the bare "Theorem" that sphinx-proof writes before it.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
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


def book_version() -> str:
    """``__version__`` of ``sxor/_version.py``, read as text (building the site imports no torch)."""
    text = (ROOT / "sxor" / "_version.py").read_text()
    match = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", text, re.MULTILINE)
    if match is None:
        raise RuntimeError("sxor/_version.py defines no __version__")
    return match.group(1)


def build_commit(root: Path = ROOT) -> str:
    """The short hash of the commit checked out at ``root``, or "unknown" outside a git checkout
    (or without git)."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,  # a failure means "not a git checkout": reported as unknown
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = result.stdout.strip()
    return (
        commit if result.returncode == 0 and re.fullmatch(r"[0-9a-f]{4,40}", commit) else "unknown"
    )


def edition_text(version: str, commit: str) -> str:
    return f"Version {version}, built from commit {commit}."


def edition_footer(app, config) -> None:
    """Append the version line to the footer (``extra_footer``, after the licences)."""
    options = config.html_theme_options
    line = edition_text(book_version(), build_commit())
    extra = str(options.get("extra_footer", "") or "")
    options["extra_footer"] = f'{extra}\n<p class="sxor-edition">{line}</p>'.strip()


def edition_on_title_page(app, pagename, templatename, context, doctree) -> None:
    """In the single-page build (what ``make pdf`` prints), the version line under the book's
    title on the first page: the theme prints that title from ``pagetitle`` in its print-only
    header, above the contents, so the line is appended there (as a block of its own size)."""
    if app.builder.name != "singlehtml" or pagename != app.config.root_doc:
        return
    title = context.get("pagetitle")
    if not title:
        return
    line = edition_text(book_version(), build_commit())
    context["pagetitle"] = (
        f'{title}<span class="sxor-edition" style="display: block; font-size: 0.4em; '
        f'margin-top: 0.75em">{line}</span>'
    )


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


def colab_tools():
    """``tools/colab.py`` (one definition of the Colab addresses), loaded once."""
    if "colab" not in _LOADED:
        spec = importlib.util.spec_from_file_location("_sxor_colab", ROOT / "tools" / "colab.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _LOADED["colab"] = module
    return _LOADED["colab"]


_LOADED: dict = {}


def colab_editions(app, pagename, templatename, context, doctree) -> None:
    groups = [b for b in context.get("header_buttons", []) if b.get("label") == "launch-buttons"]
    if not groups or not pagename.startswith("book/"):
        return
    colab = colab_tools()
    buttons = groups[0]["buttons"]
    for button in buttons:
        if button.get("text") == "Colab":
            button["url"] = colab.colab_url("full", pagename)
            icon = button.get("icon")
            registry = getattr(app.env, "sphinx_exercise_registry", {})
            if any(
                entry.get("docname") == pagename and entry.get("type") == "exercise"
                for entry in registry.values()
            ):
                student = {
                    "type": "link",
                    "text": "exercises only (Colab)",
                    "tooltip": "Open the exercises, without their solutions, in Colab",
                    "icon": icon,
                    "url": colab.colab_url("student", pagename),
                }
                buttons.insert(buttons.index(button) + 1, student)
            return


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
    app.connect("config-inited", edition_footer)
    app.connect("html-page-context", dedupe_scripts, priority=900)
    app.connect("doctree-resolved", alt_from_captions)
    # after sphinx-book-theme's launch buttons (priority 501)
    app.connect("html-page-context", colab_editions, priority=502)
    # after sphinx-book-theme sets pagetitle (priority 500)
    app.connect("html-page-context", edition_on_title_page, priority=600)
    app.connect("doctree-read", cited_titles)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
