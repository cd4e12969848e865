"""CITATION.cff: valid Citation File Format 1.2.0 and in step with the book.

Validated twice: against the format's own JSON schema (tests/data, the schema published with CFF
1.2.0, CC BY 4.0 by the Citation File Format authors), and against the rules written out here,
so that a failure names the rule. Rules of CFF 1.2.0 that this file relies on:

* required: ``cff-version`` (the string "1.2.0"), ``message``, ``title``, ``authors`` (a
  non-empty list; a person has ``family-names`` and/or ``given-names``, an entity a ``name``);
* ``date-released``: a quoted ``YYYY-MM-DD`` string; ``version``: a string;
* ``license``: SPDX identifiers; ``repository-code`` and ``url``: URLs;
* ``preferred-citation`` and each of ``references``: ``type``, ``title`` and ``authors``.

In step with the book: the version is ``sxor.__version__``, the date is the changelog's date of
that version, the repository is ``repository.url`` of ``_config.yml``, and the references are
the versions of the two papers the book follows (also those of ``references.bib``).
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

import sxor

ROOT = Path(__file__).resolve().parents[1]
CFF = yaml.safe_load((ROOT / "CITATION.cff").read_text())
SCHEMA = json.loads(
    (ROOT / "tests" / "data" / "citation-file-format-1.2.0.schema.json").read_text()
)
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
SPDX = {"MIT", "CC-BY-4.0"}


def schema_errors(data: dict) -> list[str]:
    validator = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    return [f"{list(e.path)}: {e.message}" for e in validator.iter_errors(data)]


def authors_ok(authors) -> bool:
    return (
        isinstance(authors, list)
        and bool(authors)
        and all(
            isinstance(a, dict) and (a.get("name") or a.get("family-names") or a.get("given-names"))
            for a in authors
        )
    )


def rule_errors(data: dict) -> list[str]:
    errors = []
    if data.get("cff-version") != "1.2.0":
        errors.append("cff-version must be the string 1.2.0")
    for key in ("message", "title"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            errors.append(f"{key}: a non-empty string is required")
    if not authors_ok(data.get("authors")):
        errors.append("authors: a non-empty list of persons or entities is required")
    if not (
        isinstance(data.get("date-released"), str)
        and re.fullmatch(r"\d{4}-\d\d-\d\d", data["date-released"])
    ):
        errors.append("date-released: a quoted YYYY-MM-DD string")
    if not isinstance(data.get("version"), str):
        errors.append("version: a string")
    licences = data.get("license")
    if not isinstance(licences, list) or not set(licences) <= SPDX:
        errors.append(f"license: a list of SPDX identifiers among {sorted(SPDX)}")
    for key in ("repository-code", "url"):
        if not re.fullmatch(r"https://\S+", str(data.get(key, ""))):
            errors.append(f"{key}: a URL")
    for where, ref in [("preferred-citation", data.get("preferred-citation"))] + [
        (f"references[{i}]", r) for i, r in enumerate(data.get("references") or [])
    ]:
        if not isinstance(ref, dict) or not ref.get("type") or not ref.get("title"):
            errors.append(f"{where}: type and title are required")
        elif not authors_ok(ref.get("authors")):
            errors.append(f"{where}: authors are required")
    return errors


def test_valid_against_the_published_schema():
    assert schema_errors(CFF) == []


def test_valid_against_the_written_rules():
    assert rule_errors(CFF) == []


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.pop("title"),
        lambda d: d.update(authors=[]),
        lambda d: d.update({"cff-version": "1.1.0"}),
        lambda d: d.update({"date-released": "5 Dec 2026"}),
        lambda d: d["references"][0].pop("authors"),
        lambda d: d.update(license=["Apache-3.0-ish"]),
    ],
    ids=["no title", "no authors", "old version", "bad date", "reference authors", "licence"],
)
def test_both_validations_catch_a_broken_file(change):
    broken = copy.deepcopy(CFF)
    change(broken)
    assert rule_errors(broken)
    assert schema_errors(broken)


def test_in_step_with_the_book():
    assert CFF["version"] == CFF["preferred-citation"]["version"] == sxor.__version__
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"## {sxor.__version__} ({CFF['date-released']})" in changelog
    url = CONFIG["repository"]["url"]
    assert CFF["repository-code"] == CFF["preferred-citation"]["repository-code"] == url
    assert CFF["title"] == CFF["preferred-citation"]["title"] == CONFIG["title"]
    assert CFF["authors"] == [{"name": CONFIG["author"]}]
    assert set(CFF["license"]) == SPDX


def test_the_two_papers_in_their_current_versions():
    refs = {r["title"]: r for r in CFF["references"]}
    xor = refs["Transformers Provably Learn Sparse XOR with Polylogarithmic Parameters"]
    interp = refs["Exact Sequence Interpolation with Transformers"]
    assert [a["family-names"] for a in xor["authors"]] == ["Han", "Ghoshdastidar"]
    assert [a["family-names"] for a in interp["authors"]] == ["Alcalde", "Fantuzzi", "Zuazua"]
    assert "2502.07553v2" in xor["url"]
    assert "2502.02270v3" in interp["url"] and interp["doi"] == "10.1007/s44439-026-00005-y"
    bib = (ROOT / "references.bib").read_text()
    entry = bib[bib.index("@article{alcalde2025exact") :].split("\n}", 1)[0]
    assert "2502.02270v3" in entry and "10.1007/s44439-026-00005-y" in entry
    assert "eprint       = {2502.07553v2}" in bib
