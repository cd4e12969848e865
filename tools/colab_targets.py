"""The numbers and anchors of the website, for the Colab editions (``tools/colab.py``).

A Colab notebook cannot ask Sphinx what "Theorem 2.3" is called; this module reads it once from
the environment that a build of the website leaves behind (``_build/.doctrees/environment.pickle``
after ``jupyter-book build .``) and writes it to ``tools/colab_targets.json``, which is committed:

* ``docs``: every page's title, chapter number and numbered sections (``#anchor`` -> ``2.1``);
* ``labels``: every theorem-like statement, exercise, figure and labelled section: its page, its
  anchor, its number and the text a bare reference shows on the website (``Lemma 2.1``,
  ``Exercise 4.1``, ``Fig. 5.2``, a section's title);
* ``equations``: every labelled equation's page, anchor and number (``2.1``, shown ``(2.1)``);
* ``citations``: every cited work's author-year label and its anchor on the bibliography page;
* ``python``: every documented object of ``sxor``: ``page#anchor`` on its API page.

Usage: ``python tools/colab_targets.py [ENVIRONMENT_PICKLE]`` (``make colab-targets`` builds the
site first). The file is sorted and holds no path or date, so the same book gives the same file;
``tests/test_colab.py`` checks it against the notebooks (every label they define or cite is in
it, numbered in the order they define them) and against a build of the site when one is there.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ROOT / "tools" / "colab_targets.json"
ENVIRONMENT = ROOT / "_build" / ".doctrees" / "environment.pickle"


def _number(numbers: tuple[int, ...] | None) -> str | None:
    return ".".join(map(str, numbers)) if numbers else None


def _author_year(entry: Any) -> str:
    """The label the website prints for a citation (``_ext/sxor_bibstyle.py``, one definition)."""
    sys.path.insert(0, str(ROOT / "_ext"))
    try:
        from sxor_bibstyle import author_year_label  # _ext is not a package
    finally:
        sys.path.pop(0)
    return author_year_label(entry)


def targets_from_environment(env: Any) -> dict[str, Any]:
    """Everything :mod:`tools.colab` needs from a Sphinx build environment (see the module
    docstring)."""
    fignumbers = env.toc_fignumbers
    docs = {}
    for docname in sorted(env.all_docs):
        sections = env.toc_secnumbers.get(docname, {})
        docs[docname] = {
            "title": env.titles[docname].astext(),
            "number": _number(sections.get("")),
            "sections": {
                anchor: _number(numbers) for anchor, numbers in sections.items() if anchor
            },
        }

    labels: dict[str, dict[str, Any]] = {}
    for label, (docname, anchor, name) in env.domaindata["std"]["labels"].items():
        if docname not in docs or "-solution-" in label:
            continue
        labels[label] = {"doc": docname, "anchor": anchor, "kind": "section", "text": name}
    for label, info in env.proof_list.items():
        kind = info["realtype"]
        number = _number(
            fignumbers.get(info["docname"], {}).get(info["countertype"], {}).get(label)
        )
        text = kind.capitalize() + (f" {number}" if number else "")
        labels[label] = {"doc": info["docname"], "anchor": label, "kind": kind, "text": text}
        labels[label]["number"] = number
    for label, info in env.sphinx_exercise_registry.items():
        if info["type"] != "exercise":
            continue
        number = _number(fignumbers.get(info["docname"], {}).get("exercise", {}).get(label))
        text = "Exercise" + (f" {number}" if number else "")
        labels[label] = {"doc": info["docname"], "anchor": label, "kind": "exercise", "text": text}
        labels[label]["number"] = number
    for kinds in fignumbers.values():
        for label, numbers in kinds.get("figure", {}).items():
            if label in labels:
                labels[label].update(kind="figure", number=_number(numbers))
                labels[label]["text"] = f"Fig. {_number(numbers)}"

    equations = {}
    for label, (docname, _serial) in env.domaindata["math"]["objects"].items():
        anchor = f"equation-{label}"
        numbers = fignumbers.get(docname, {}).get("displaymath", {}).get(anchor)
        equations[label] = {"doc": docname, "anchor": anchor, "number": _number(numbers)}

    citations = {}
    for citation in env.domaindata["cite"]["citations"]:
        citations[citation.key] = {
            "doc": citation.bibliography_key.docname,
            "anchor": citation.citation_id,
            "label": _author_year(citation.entry),
        }

    python = {
        name: f"{entry.docname}#{entry.node_id}"
        for name, entry in env.domaindata["py"]["objects"].items()
        if name.startswith("sxor")
    }
    return {
        "docs": docs,
        "labels": dict(sorted(labels.items())),
        "equations": dict(sorted(equations.items())),
        "citations": dict(sorted(citations.items())),
        "python": dict(sorted(python.items())),
    }


def read_environment(path: Path = ENVIRONMENT) -> dict[str, Any]:
    """:func:`targets_from_environment` of the pickled environment at ``path``."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path}: no built site; run `jupyter-book build .` first")
    with open(path, "rb") as handle:
        env = pickle.load(handle)  # our own build's file
    return targets_from_environment(env)


def load_targets(path: Path = TARGETS) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def write_targets(targets: dict[str, Any], path: Path = TARGETS) -> None:
    Path(path).write_text(json.dumps(targets, indent=1, ensure_ascii=False, sort_keys=True) + "\n")


def main(argv: list[str]) -> int:
    source = Path(argv[1]) if len(argv) > 1 else ENVIRONMENT
    targets = read_environment(source)
    write_targets(targets)
    counts = {key: len(value) for key, value in targets.items()}
    print(f"wrote {TARGETS.relative_to(ROOT)} from {source}: {counts}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
