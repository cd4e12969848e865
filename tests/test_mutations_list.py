"""The hand-made mutations of ``tools/mutations.json`` still apply to the code.

``make mutate`` (not part of ``make test``: about half an hour) replaces each mutation's
``original`` text, which must occur exactly once in its file. A refactor or a reformat that
changes that text would make the mutation silently inapplicable; this test catches it at once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = json.loads((ROOT / "tools" / "mutations.json").read_text())
MUTATIONS = next(v for k, v in DATA.items() if k != "about")


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m["id"] for m in MUTATIONS])
def test_mutation_original_occurs_exactly_once(mutation):
    text = (ROOT / mutation["file"]).read_text()
    assert text.count(mutation["original"]) == 1, (
        f"{mutation['id']}: its original text occurs {text.count(mutation['original'])} times "
        f"in {mutation['file']}"
    )
    assert mutation["mutated"] != mutation["original"]
