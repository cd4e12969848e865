"""The Colab editions of the book: every notebook in plain Markdown and LaTeX, as Colab shows it.

Usage::

    python tools/colab.py build [--out DIR] [--edition full|student] [NOTEBOOK ...]
    python tools/colab.py pin          # the install cell of every notebook installs the release

``make colab`` writes ``_build/colab/full/`` (everything, solutions included) and
``_build/colab/student/`` (every solution left out, exercise text kept: ``tools/student.py``),
each with the tree of ``book/`` and a ``README.md`` that lists the chapters. The publish job
pushes them to the branches :data:`BRANCHES`; the website's Colab button opens the full edition
and every chapter page links the student one (``_ext/sxor_site.py``, :func:`colab_url`).

Colab renders CommonMark and LaTeX but not MyST, so each markdown cell is rewritten:

* theorem-like statements, exercises, solutions and admonitions become a bold heading with the
  website's number (``**Lemma 2.1** (title)``) between two horizontal rules; proofs start with
  *Proof.* and end with a square;
* references (``{prf:ref}``, ``{numref}``, ``{ref}``, ``{eq}``, ``{doc}``, the Python roles,
  ``{download}`` and relative Markdown links) become links into the published website (:func:`site_url`) with the text the
  website shows; citations become the website's author-year text, linked to the bibliography;
* labelled equations get their number as ``\\tag{2.1}``; ``(label)=`` targets are dropped;
  section headings get the website's section numbers; a figure's caption (cell metadata) follows
  its cell as ``**Fig. 2.1** caption``.

Numbers and anchors come from ``tools/colab_targets.json`` (``tools/colab_targets.py``, read from
a build of the website). A directive or role this module does not know raises ``ValueError``, so
new markup cannot reach Colab unconverted. Code cells and their outputs are copied unchanged.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import nbformat
import yaml
from docutils.nodes import make_id

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tools.colab_targets import TARGETS, load_targets  # noqa: E402  (after the path is set)
from tools.student import OPENING, block_end, book_notebooks, student_notebook  # noqa: E402

BOOK = ROOT / "book"
EDITIONS = ("full", "student")
#: The branch that holds each edition (pushed by the publish job).
BRANCHES = {"full": "colab", "student": "colab-student"}
COLAB = "https://colab.research.google.com/github"

ROLE = re.compile(r"\{(?P<name>[a-z][\w:-]*)\}`(?P<body>[^`]*)`")
CODE_FENCE = re.compile(r"^\s{0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^`{]*)$")
EQUATION_LABEL = re.compile(r"^(?P<head>.*)\$\$\s*\((?P<label>[^)\s]+)\)\s*$")
TARGET_LINE = re.compile(r"^\s*\([\w.:-]+\)=\s*$")
HEADING = re.compile(r"^(?P<hashes>#{2,6})\s+(?P<title>.+?)\s*$")
INSTALL = re.compile(r"(?P<head>git\+https://github\.com/[\w.-]+/[\w.-]+)@(?P<ref>[^\"'\s]+)")
RELATIVE_LINK = re.compile(r"\]\((?!\w+:|/)(?P<target>[^)\s]+)\)")
PYTHON_ROLES = {"func", "meth", "class", "mod", "attr", "data", "exc", "obj"}
ADMONITIONS = {
    "note", "tip", "hint", "important", "warning", "caution", "attention", "danger", "error",
    "seealso",
}  # fmt: skip


# --- one home for the addresses ---------------------------------------------------------------


def config() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "_config.yml").read_text())


def repository() -> tuple[str, str]:
    """``(OWNER, NAME)`` of ``repository.url`` in ``_config.yml``."""
    url = str(config()["repository"]["url"]).rstrip("/")
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+)", url)
    if match is None:
        raise ValueError(
            f"_config.yml: repository.url {url!r} is not https://github.com/OWNER/NAME"
        )
    return match.group(1), match.group(2)


def site_url() -> str:
    """The published website: GitHub Pages of the repository, ``https://OWNER.github.io/NAME/``."""
    owner, name = repository()
    return f"https://{owner.lower()}.github.io/{name}/"


def page_url(docname: str, anchor: str = "") -> str:
    return f"{site_url()}{docname}.html" + (f"#{anchor}" if anchor else "")


def colab_url(edition: str, docname: str) -> str:
    """The Colab address of page ``docname`` (``book/part1/01_...``) in ``edition``."""
    owner, name = repository()
    path = Path(docname).relative_to("book").as_posix()
    return f"{COLAB}/{owner}/{name}/blob/{BRANCHES[edition]}/{path}.ipynb"


def package_version() -> str:
    """The package's version: ``sxor/_version.py`` when there is one, else ``pyproject.toml``."""
    for path, pattern in (
        (ROOT / "sxor" / "_version.py", r"^__version__\s*=\s*[\"']([^\"']+)[\"']"),
        (ROOT / "pyproject.toml", r"^version\s*=\s*[\"']([^\"']+)[\"']"),
    ):
        if path.is_file():
            match = re.search(pattern, path.read_text(), re.MULTILINE)
            if match:
                return match.group(1)
    raise ValueError("no version in sxor/_version.py or pyproject.toml")


def release_tag() -> str:
    """The tag of the release whose package matches the committed outputs: ``v`` + version."""
    return f"v{package_version()}"


def pin_install_cell(source: str, tag: str) -> str:
    """The Colab cell installing ``sxor`` at ``tag`` (the git reference after ``@`` replaced)."""
    return INSTALL.sub(lambda m: f"{m['head']}@{tag}", source)


#: Added to the install cell in the Colab editions: PyTorch's kernels that made the stored
#: outputs (``tools/cpu_kernels.py`` says why), set before the notebook imports torch.
KERNELS = (
    '    os.environ.setdefault("ATEN_CPU_CAPABILITY", "{capability}")'
    "  # the CPU kernels of the stored outputs"
)


def colab_install_cell(source: str) -> str:
    """The install cell of a Colab edition: pinned to the release, and asking PyTorch for the
    CPU kernels that made the stored outputs (Colab's processors have AVX-512 too)."""
    from tools.cpu_kernels import CAPABILITY

    source = pin_install_cell(source, release_tag())
    if "ATEN_CPU_CAPABILITY" in source:
        return source
    return "import os\n" + source.rstrip("\n") + "\n" + KERNELS.format(capability=CAPABILITY)


def pin_notebooks(notebooks: list[Path]) -> int:
    """Pin the install cell (first code cell) of each notebook to :func:`release_tag`; only that
    cell's source changes, the rest of the file is written back byte for byte as it was read.
    Returns how many notebooks changed."""
    tag, changed = release_tag(), 0
    for path in notebooks:
        nb = json.loads(Path(path).read_text())
        first = next(cell for cell in nb["cells"] if cell["cell_type"] == "code")
        source = "".join(first["source"])
        pinned = pin_install_cell(source, tag)
        if pinned != source:
            first["source"] = pinned.splitlines(keepends=True)
            Path(path).write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
            changed += 1
    return changed


# --- markdown -----------------------------------------------------------------------------------


def box(header: str, body: str) -> str:
    """A heading line and its text between two horizontal rules (math-safe, unlike ``>``)."""
    parts = ["---", header, body.strip("\n"), "---"]
    return "\n\n".join(part for part in parts if part)


def end_with(body: str, mark: str) -> str:
    """``body`` with ``mark`` after its last paragraph (on a line of its own after math/code)."""
    lines = body.rstrip("\n").split("\n")
    last = lines[-1].strip() if lines else ""
    if last and not last.startswith(("$$", "```", "~~~", "\\end", "|", "-", "*", ">")):
        lines[-1] = lines[-1].rstrip() + " " + mark
        return "\n".join(lines)
    return body.rstrip("\n") + "\n\n" + mark


class Converter:
    """Rewrites the markdown of one notebook (page ``docname``) for Colab."""

    def __init__(self, docname: str, targets: dict[str, Any], name: str = "") -> None:
        self.docname = docname
        self.targets = targets
        self.name = name or docname
        self.substitutions = config().get("parse", {}).get("myst_substitutions", {}) or {}

    def fail(self, message: str) -> ValueError:
        return ValueError(f"{self.name}: {message}")

    # references

    def label(self, label: str) -> dict[str, Any]:
        try:
            return self.targets["labels"][label]
        except KeyError:
            raise self.fail(f"unknown label {label!r} (refresh tools/colab_targets.json)") from None

    def doc(self, target: str) -> str:
        target = target.removesuffix(".md").removesuffix(".ipynb")
        if target.startswith("/"):
            docname = target.lstrip("/")
        else:
            docname = (Path(self.docname).parent / target).as_posix()
            parts: list[str] = []
            for part in docname.split("/"):
                if part == "..":
                    parts.pop()
                elif part != ".":
                    parts.append(part)
            docname = "/".join(parts)
        if docname not in self.targets["docs"]:
            raise self.fail(f"unknown page {target!r}")
        return docname

    def role(self, match: re.Match[str]) -> str:
        name, body = match["name"], match["body"]
        explicit = re.fullmatch(r"(?P<text>.*?)\s*<(?P<target>[^<>]+)>", body, re.DOTALL)
        text, target = (explicit["text"], explicit["target"]) if explicit else (None, body.strip())
        if name in ("prf:ref", "ref", "numref"):
            info = self.label(target)
            number = info.get("number") or ""
            if text is not None:
                shown = text.replace("{number}", number).replace("%s", number)
            else:
                shown = info["text"]
            return f"[{self.inline(shown)}]({page_url(info['doc'], info['anchor'])})"
        if name == "eq":
            try:
                info = self.targets["equations"][target]
            except KeyError:
                raise self.fail(f"unknown equation {target!r}") from None
            shown = text if text is not None else f"({info['number']})"
            return f"[{shown}]({page_url(info['doc'], info['anchor'])})"
        if name == "doc":
            docname = self.doc(target)
            shown = text if text is not None else self.targets["docs"][docname]["title"]
            return f"[{self.inline(shown)}]({page_url(docname)})"
        if name in ("cite", "cite:p", "cite:t", "cite:ps", "cite:ts"):
            return self.citation(name, [key.strip() for key in body.split(",")])
        if name.removeprefix("py:") in PYTHON_ROLES:
            dotted = target.lstrip("~")
            info = self.targets["python"].get(dotted)
            call = "()" if name.removeprefix("py:") in ("func", "meth") else ""
            shown = f"`{text}`" if text is not None else f"`{dotted}{call}`"
            if info is None:  # not documented: the website shows it unlinked too
                return shown
            return f"[{shown}]({page_url(*info.split('#', 1))})"
        if name == "math":
            return f"${body}$"
        if name == "download":
            owner, repo = repository()
            path = (Path(self.docname).parent / target).as_posix()
            url = f"https://github.com/{owner}/{repo}/blob/{release_tag()}/{path}"
            return f"[{text if text is not None else Path(target).name}]({url})"
        raise self.fail(f"the role {{{name}}} has no Colab form (teach tools/colab.py)")

    def citation(self, name: str, keys: list[str]) -> str:
        shown = []
        for key in keys:
            info = self.targets["citations"].get(key)
            if info is None:
                raise self.fail(f"unknown citation {key!r}")
            label = info["label"]
            if name.startswith("cite:t"):
                who, year = label.rsplit(", ", 1)
                label = f"{who} ({year})"
            shown.append(f"[{label}]({page_url(info['doc'], info['anchor'])})")
        text = "; ".join(shown)
        # Parentheses, not the website's brackets: ``\[`` opens display math in Colab.
        return text if name.startswith("cite:t") else f"({text})"

    def link(self, match: re.Match[str]) -> str:
        """A relative Markdown link: to the page on the website, or to the file in the
        repository at the release (Colab has neither next to the notebook)."""
        target, _, anchor = match["target"].partition("#")
        if not target:
            return f"]({page_url(self.docname, anchor)})"
        path = os.path.normpath(Path(self.docname).parent / target)
        try:
            return f"]({page_url(self.doc(target), anchor)})"
        except ValueError:
            owner, repo = repository()
            return f"](https://github.com/{owner}/{repo}/blob/{release_tag()}/{path})"

    def inline(self, text: str) -> str:
        text = RELATIVE_LINK.sub(self.link, text)
        text = ROLE.sub(self.role, text)
        for key, value in self.substitutions.items():
            text = re.sub(r"\{\{\s*" + re.escape(key) + r"\s*\}\}", str(value), text)
        return text

    # blocks

    def heading(self, match: re.Match[str]) -> str:
        title = match["title"]
        plain = re.sub(r"[$`*_]", "", ROLE.sub(lambda m: m["body"], title))
        number = self.targets["docs"][self.docname]["sections"].get("#" + make_id(plain))
        prefix = f"{number}. " if number else ""
        return f"{match['hashes']} {prefix}{self.inline(title)}"

    def directive(self, name: str, argument: str, options: dict[str, str], body: str) -> str:
        content = self.markdown(body) if body.strip() else ""
        label = options.get("label", "")
        if name == "prf:proof":
            return end_with("*Proof.* " + content if content else "*Proof.*", "∎")
        if name.startswith("prf:"):
            if not label:
                raise self.fail(f"{{{name}}} {argument!r} has no :label: (its number is unknown)")
            header = f"**{self.label(label)['text']}**"
            return box(header + (f" ({self.inline(argument)})" if argument else ""), content)
        if name in ("exercise", "exercise-start"):
            header = f"**{self.label(label)['text']}**" if label else "**Exercise**"
            return box(header + (f" ({self.inline(argument)})" if argument else ""), content)
        if name in ("solution", "solution-start"):
            header = f"**Solution to {self.label(argument)['text']}**"
            return box(header, content) if name == "solution" else f"---\n\n{header}"
        if name == "solution-end":
            return "---"
        if name == "admonition" or name in ADMONITIONS:
            title = argument if name == "admonition" else name.capitalize()
            return box(f"**{self.inline(title)}**", content)
        if name == "math":
            tag = ""
            if label:
                tag = f"\n\\tag{{{self.targets['equations'][label]['number']}}}"
            return f"$$\n{body.strip()}{tag}\n$$"
        if name == "figure":
            owner, repo = repository()
            path = (Path(self.docname).parent / argument.strip()).as_posix()
            src = f"https://raw.githubusercontent.com/{owner}/{repo}/{release_tag()}/{path}"
            caption = content
            if options.get("name"):
                caption = f"**{self.label(options['name'])['text']}** {content}"
            return f"![{Path(path).stem}]({src})\n\n{caption}"
        raise self.fail(f"the directive {{{name}}} has no Colab form (teach tools/colab.py)")

    def markdown(self, text: str) -> str:
        """The Colab form of one markdown text (a cell, or the body of a directive)."""
        lines, out, index = text.split("\n"), [], 0
        while index < len(lines):
            line = lines[index]
            opening = OPENING.match(line)
            fence = CODE_FENCE.match(line) if opening is None else None
            if opening:
                end = block_end(lines, index, opening["fence"])
                inner = lines[index + 1 : end]
                options: dict[str, str] = {}
                while inner and re.match(r"^:[\w-]+:", inner[0]):
                    key, _, value = inner.pop(0)[1:].partition(":")
                    options[key] = value.strip()
                out.append(
                    self.directive(
                        opening["name"], opening["argument"].strip(), options, "\n".join(inner)
                    )
                )
                index = end + 1
            elif fence:
                end = block_end(lines, index, fence["fence"])
                out.extend(lines[index : end + 1])
                index = end + 1
            elif TARGET_LINE.match(line):
                index += 1
            else:
                equation = EQUATION_LABEL.match(line)
                heading = HEADING.match(line)
                if equation:
                    number = self.targets["equations"].get(equation["label"], {}).get("number")
                    if number is None:
                        raise self.fail(f"unknown equation label {equation['label']!r}")
                    head = equation["head"].rstrip()
                    out.extend(
                        [head, f"\\tag{{{number}}}", "$$"] if head else [rf"\tag{{{number}}}", "$$"]
                    )
                elif heading:
                    out.append(self.heading(heading))
                else:
                    out.append(self.inline(line))
                index += 1
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip("\n")
        # Adjacent boxes share one rule.
        return re.sub(r"^---\n\n---$", "---", text, flags=re.MULTILINE)


# --- notebooks ------------------------------------------------------------------------------------


def notice(docname: str, edition: str, targets: dict[str, Any]) -> str:
    info = targets["docs"][docname]
    title = info["title"]
    page = f"Chapter {info['number']}, {title}" if info["number"] else title
    what = (
        "the exercises-only edition: every solution is left out"
        if edition == "student"
        else "the full edition, solutions included"
    )
    return (
        f"*Attention, provably*, in Colab: [{page}]({page_url(docname)}), {what}. "
        f"Run the cells from the top: the first installs the book's package `sxor` "
        f"({release_tag()}, the release these outputs come from). Theorems, figures, equations "
        "and exercises carry the website's numbers; references open the website."
    )


def figure_caption(cell: Any, converter: Converter) -> str | None:
    figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
    if not figure.get("caption"):
        return None
    caption = converter.inline(figure["caption"])
    name = figure.get("name")
    return f"**{converter.label(name)['text']}** {caption}" if name else caption


def colab_notebook(
    nb: Any, docname: str, edition: str, targets: dict[str, Any] | None = None
) -> Any:
    """The Colab form of notebook ``nb`` (page ``docname``) in ``edition``; ``nb`` is unchanged."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    targets = targets if targets is not None else load_targets(TARGETS)
    if docname not in targets["docs"]:
        raise ValueError(f"{docname}: not a page of the book (refresh tools/colab_targets.json)")
    name = Path(docname).name
    source = student_notebook(nb, name) if edition == "student" else copy.deepcopy(nb)
    converter = Converter(docname, targets, name)
    # New cells get ids derived from the book's, so that the same book gives the same files.
    cells = [nbformat.v4.new_markdown_cell(notice(docname, edition, targets), id="colab-notice")]
    for cell in source.cells:
        if cell.cell_type == "markdown":
            cell.source = converter.markdown(cell.source)
            cells.append(cell)
            continue
        if (
            cell.cell_type == "code"
            and cell.source.lstrip().startswith("import sys")
            and ("google.colab" in cell.source)
        ):
            cell.source = colab_install_cell(cell.source)
        cells.append(cell)
        caption = figure_caption(cell, converter)
        if caption:
            cells.append(nbformat.v4.new_markdown_cell(caption, id=f"{cell.get('id', '')}-caption"))
    source.cells = cells
    return source


def docname_of(path: Path) -> str:
    return Path(path).resolve().relative_to(ROOT).with_suffix("").as_posix()


def index_readme(edition: str, docnames: list[str], targets: dict[str, Any]) -> str:
    owner, name = repository()
    kind = "every solution left out" if edition == "student" else "solutions included"
    lines = [
        "# Attention, provably: the Colab edition",
        "",
        f"Every chapter of the book as a notebook that Colab renders ({kind}). The website is "
        f"<{site_url()}>; the sources are <https://github.com/{owner}/{name}>. Generated by "
        f"`make colab` for release {release_tag()}; do not edit here.",
        "",
    ]
    for docname in docnames:
        info = targets["docs"][docname]
        title = f"{info['number']}. {info['title']}" if info["number"] else info["title"]
        path = Path(docname).relative_to("book").as_posix() + ".ipynb"
        lines.append(f"- [{title}]({path}) ([open in Colab]({colab_url(edition, docname)}))")
    return "\n".join(lines) + "\n"


def write_edition(edition: str, out: Path, notebooks: list[Path] | None = None) -> list[Path]:
    """Write ``edition`` of ``notebooks`` (default: all) under ``out`` with the tree of
    ``book/``, and its ``README.md``; return the notebooks written."""
    targets = load_targets(TARGETS)
    notebooks = notebooks or book_notebooks()
    written = []
    for path in notebooks:
        docname = docname_of(path)
        nb = nbformat.read(path, as_version=4)
        target = Path(out) / Path(docname).relative_to("book").with_suffix(".ipynb")
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(colab_notebook(nb, docname, edition, targets), target)
        written.append(target)
    from tools.check_site import toc_pages

    order = toc_pages(yaml.safe_load((ROOT / "_toc.yml").read_text()))
    docnames = [doc for doc in order if doc in {docname_of(p) for p in notebooks}]
    (Path(out) / "README.md").write_text(index_readme(edition, docnames, targets))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="write the Colab editions")
    build.add_argument("--out", type=Path, default=ROOT / "_build" / "colab")
    build.add_argument("--edition", choices=EDITIONS, action="append")
    build.add_argument("notebooks", nargs="*", type=Path)
    commands.add_parser("pin", help="pin every install cell to the release tag")
    commands.add_parser("tag", help="print the release tag")
    args = parser.parse_args(argv)
    if args.command == "tag":
        print(release_tag())
        return 0
    if args.command == "pin":
        changed = pin_notebooks(book_notebooks())
        print(f"install cells pinned to {release_tag()}: {changed} notebooks changed")
        return 0
    for edition in args.edition or EDITIONS:
        written = write_edition(edition, args.out / edition, args.notebooks or None)
        print(f"wrote {len(written)} {edition} Colab notebooks to {args.out / edition}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
