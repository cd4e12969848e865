r"""Datasets in files, for ``python -m sxor certify FILE``: a JSON and an NPZ format.

**JSON** (``.json``): one object with

* ``"inputs"``: a list of :math:`N` input sequences, each a list of :math:`n_j` tokens, each a list
  of :math:`d` numbers;
* ``"targets"``: a list of :math:`N` target sequences, each a list of :math:`m_j` tokens;
* optionally ``"tau"``: the temperature (default: the one :func:`sxor.interp.construct.construct`
  chooses, near :math:`\tau_\mathrm{max}/2`).

Numbers are exact: JSON integers, or strings holding a rational (``"3/8"``, ``"-2"``, ``"0.125"``
is read as the decimal :math:`1/8`). JSON floats (``0.1``) are refused, because a binary float is
not the decimal it prints as; write ``"0.1"`` or ``"1/10"``. Example::

    {"inputs":  [[[0, 0], [1, 0], [0, 1]], [[2, 2], [3, 1]]],
     "targets": [[[1, 1], ["1/2", 0]],     [[5, 5]]]}

**NPZ** (``.npz``, written by ``numpy.savez``): integer arrays ``inputs_0, ..., inputs_{N-1}`` (shape
``[n_j, d]``) and ``targets_0, ..., targets_{N-1}`` (shape ``[m_j, d]``), and optionally an integer
``denominator`` (default 1) that divides every entry (and an optional integer ``tau``), so that ``np.savez(f, inputs_0=8 * X0, ...,
denominator=8)`` stores tokens with eighths. Float arrays are refused likewise.

Either way the dataset is then checked by :func:`sxor.interp.dataset.check_dataset`, which refuses
an inadmissible one (repeated tokens, :math:`m_j > n_j`, equal inputs with different targets, ...)
with the reason.
"""

from __future__ import annotations

import json
import zipfile
from fractions import Fraction
from pathlib import Path
from typing import TypeAlias

import numpy as np

from .dataset import check_dataset
from .exact import exact_scalar

# A JSON value read exactly: a Fraction, or (nested) lists of them.
_ExactJSON: TypeAlias = "Fraction | list[_ExactJSON]"


def _exact_json(value: object, where: str) -> _ExactJSON:
    if isinstance(value, list):
        return [_exact_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
    return _exact_json_number(value, where)


def _exact_json_number(value: object, where: str) -> Fraction:
    if isinstance(value, float):
        raise ValueError(
            f"{where} is the JSON float {value!r}: write exact numbers, as integers or strings "
            f'such as "{value!r}" (read as a decimal) or "1/10"'
        )
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(
            f"{where} is {value!r}; tokens hold integers or strings with a rational number"
        )
    return exact_scalar(where, value)


def load_dataset(path: str | Path) -> tuple[list[np.ndarray], list[np.ndarray], Fraction | None]:
    r"""Read and check a dataset file; return ``(inputs, targets, tau)`` (``tau`` ``None`` if absent).

    Parameters
    ----------
    path
        A ``.json`` or ``.npz`` file in the formats of :mod:`sxor.interp.datafile`.

    Raises
    ------
    ValueError
        naming the file and the reason: unknown suffix, unreadable or malformed file, missing keys,
        floats, and every dataset :func:`~sxor.interp.dataset.check_dataset` refuses.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            try:
                data = json.loads(path.read_text())
            except (json.JSONDecodeError, UnicodeDecodeError) as err:
                raise ValueError(f"not valid JSON ({err})") from None
            if not isinstance(data, dict):
                raise ValueError(
                    f"the file must hold a JSON object with keys 'inputs' and 'targets', got {type(data).__name__}"
                )
            missing = {"inputs", "targets"} - set(data)
            if missing:
                raise ValueError(f"missing key(s) {sorted(missing)}")
            extra = set(data) - {"inputs", "targets", "tau"}
            if extra:
                raise ValueError(f"unknown key(s) {sorted(extra)}; allowed: inputs, targets, tau")
            for key in ("inputs", "targets"):
                if not isinstance(data[key], list):
                    raise ValueError(f"'{key}' must be a list of sequences")
            inputs = [
                np.array(_exact_json(x, f"inputs[{j}]"), dtype=object)
                for j, x in enumerate(data["inputs"])
            ]
            targets = [
                np.array(_exact_json(y, f"targets[{j}]"), dtype=object)
                for j, y in enumerate(data["targets"])
            ]
            tau = None if data.get("tau") is None else _exact_json_number(data["tau"], "tau")
        elif suffix == ".npz":
            try:
                with np.load(path, allow_pickle=False) as f:
                    arrays = {k: f[k] for k in f.files}
            except (zipfile.BadZipFile, OSError, ValueError) as err:
                raise ValueError(f"not a readable NPZ file ({err})") from None
            N = sum(1 for k in arrays if k.startswith("inputs_"))
            expected = {f"inputs_{j}" for j in range(N)} | {f"targets_{j}" for j in range(N)}
            if N == 0 or not expected <= set(arrays):
                raise ValueError(
                    f"need arrays inputs_0..inputs_{{N-1}} and targets_0..targets_{{N-1}}, got {sorted(arrays)}"
                )
            extra = set(arrays) - expected - {"denominator", "tau"}
            if extra:
                raise ValueError(f"unknown array(s) {sorted(extra)}")
            for k, a in arrays.items():
                if a.dtype.kind not in "iu":
                    raise ValueError(
                        f"array {k!r} has dtype {a.dtype}; store integers (and a 'denominator')"
                    )
            den = int(arrays["denominator"]) if "denominator" in arrays else 1
            if den <= 0:
                raise ValueError(f"denominator must be a positive integer, got {den}")

            def tokens(a: np.ndarray) -> np.ndarray:
                out = np.empty(a.shape, dtype=object)
                out.flat[:] = [Fraction(int(v), den) for v in a.flat]
                return out

            inputs = [tokens(arrays[f"inputs_{j}"]) for j in range(N)]
            targets = [tokens(arrays[f"targets_{j}"]) for j in range(N)]
            tau = Fraction(int(arrays["tau"]), den) if "tau" in arrays else None
        else:
            raise ValueError(f"unknown format {suffix or '(no suffix)'!r}: use .json or .npz")
        X, Y = check_dataset(inputs, targets)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    return X, Y, tau
