"""Results files: JSON with the records of a sweep and how they were made.

Every file written by the command line records the command, the device, the library versions and
the date beside the numbers, so a committed file says exactly how to reproduce it.
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import sys
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import torch


#: The book's repository (``repository.url`` in ``_config.yml``; a test keeps the two equal).
REPOSITORY = "https://github.com/sxor-notes/sxor-book"

#: The committed full-size results, beside the package in a checkout of the repository.
RESULTS_DIR = Path(__file__).resolve().parents[1] / "results"


def provenance(device: torch.device | str) -> dict[str, Any]:
    """Command, device, versions and date of the current run."""
    device = torch.device(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    return {
        "command": "python -m sxor " + " ".join(sys.argv[1:]),
        "device": f"{device.type}: {name}",
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def save_results(path: str | Path, experiment: str, params: dict, records: list[dict], meta: dict) -> Path:
    """Write ``{"experiment", "params", "meta", "records"}`` as indented JSON."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {"experiment": experiment, "params": params, "meta": meta, "records": records}
    path.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n")
    return path


def load_results(path: str | Path) -> dict:
    """Read a results file written by :func:`save_results`."""
    return json.loads(Path(path).read_text())


def committed_results(name: str) -> dict:
    """The committed full-size results file ``results/NAME.json``.

    Read from the repository checkout when ``sxor`` runs from one (an editable install, as in CI);
    otherwise (e.g. in Colab, where ``sxor`` is installed from git without ``results/``)
    downloaded from the repository's ``main`` branch.
    """
    local = RESULTS_DIR / f"{name}.json"
    if local.is_file():
        return load_results(local)
    url = f"{REPOSITORY.replace('github.com', 'raw.githubusercontent.com')}/main/results/{name}.json"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return json.loads(response.read())
    except OSError as err:
        raise ValueError(f"no results file {name!r}: not at {local} and not downloadable from {url} ({err})") from err
