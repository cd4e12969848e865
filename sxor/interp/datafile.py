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

**Limits**, checked before the work they bound: a file of at most :data:`MAX_FILE_BYTES` bytes
holding at most :data:`MAX_ENTRIES` numbers (for NPZ, read from the array headers before any
array is loaded); rational strings of at most :data:`sxor.interp.exact.MAX_DIGITS` digits and a
decimal exponent within :math:`\pm` :data:`sxor.interp.exact.MAX_EXPONENT`, and JSON integers of
at most as many digits; JSON nested too deeply is refused, not followed. The cost of building and
certifying the network is estimated by :func:`certify_cost` (``python -m sxor certify`` refuses a
dataset above its budget, :data:`MAX_COST`, unless ``--max-cost`` raises it).
"""

from __future__ import annotations

import json
import math
import zipfile
from fractions import Fraction
from pathlib import Path

import numpy as np

from .dataset import check_dataset
from .exact import MAX_DIGITS, exact_scalar

#: Largest dataset file read, in bytes (16 MiB).
MAX_FILE_BYTES = 16 * 2**20
#: Most numbers (token coordinates, inputs and targets together) a dataset file may hold.
MAX_ENTRIES = 10**6
#: Default budget of ``python -m sxor certify``, in the units of :func:`certify_cost`: measured,
#: one unit costs about 1 to 3 microseconds on one CPU core, so the budget is a few minutes.
MAX_COST = 10**8

_BIG_INT_BITS = int(MAX_DIGITS * 3.33) + 4  # ints of fewer bits have at most MAX_DIGITS digits


def _json_number(value: object, where: str) -> Fraction:
    if isinstance(value, float):
        raise ValueError(
            f"{where} is the JSON float {value!r}: write exact numbers, as integers or strings "
            f'such as "{value!r}" (read as a decimal) or "1/10"'
        )
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        shown = type(value).__name__ if isinstance(value, (list, dict)) else repr(value)
        raise ValueError(
            f"{where} is a JSON {shown}; a coordinate is an integer or a string with a rational"
        )
    if (
        isinstance(value, int)
        and value.bit_length() > _BIG_INT_BITS - 40
        and len(str(abs(value))) > MAX_DIGITS
    ):
        raise ValueError(
            f"{where} is an integer of more than {MAX_DIGITS} digits "
            f"(the limit sxor.interp.exact.MAX_DIGITS)"
        )
    return exact_scalar(where, value)


def _json_sequences(value: object, key: str, budget: list[int]) -> list[np.ndarray]:
    """``value`` as sequences of tokens of exact numbers, with the structure checked level by level."""
    if not isinstance(value, list):
        raise ValueError(f"'{key}' must be a list of sequences, got a JSON {type(value).__name__}")
    out = []
    for j, seq in enumerate(value):
        where = f"{key}[{j}]"
        if not isinstance(seq, list):
            raise ValueError(
                f"{where} must be a sequence (a list of tokens, each a list of d numbers), "
                f"got a JSON {type(seq).__name__}"
            )
        if not seq:
            raise ValueError(f"{where} is empty; every sequence needs at least one token")
        for i, tok in enumerate(seq):
            if not isinstance(tok, list):
                raise ValueError(
                    f"{where}[{i}] must be a token (a list of d numbers), got {type(tok).__name__}"
                )
            if len(tok) != len(seq[0]):
                raise ValueError(
                    f"ragged tokens in sequence {where}: token {i} has {len(tok)} numbers, "
                    f"token 0 has {len(seq[0])}"
                )
        budget[0] -= len(seq) * len(seq[0])
        if budget[0] < 0:
            raise ValueError(f"more than {MAX_ENTRIES} numbers (sxor.interp.datafile.MAX_ENTRIES)")
    for j, seq in enumerate(value):
        tokens = np.empty((len(seq), len(seq[0])), dtype=object)
        for i, tok in enumerate(seq):
            for c, v in enumerate(tok):
                tokens[i, c] = _json_number(v, f"{key}[{j}][{i}][{c}]")
        out.append(tokens)
    return out


def _no_duplicates(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    repeated = sorted({k for k in keys if keys.count(k) > 1}) if len(set(keys)) < len(keys) else []
    if repeated:
        raise ValueError(f"the key(s) {repeated} appear more than once in one JSON object")
    return dict(pairs)


def _read_json(path: Path) -> tuple[list, list, Fraction | None]:
    try:
        data = json.loads(path.read_bytes(), object_pairs_hook=_no_duplicates)
    except RecursionError:
        raise ValueError("not valid JSON here: nested too deeply (a dataset has depth 4)") from None
    except (ValueError, UnicodeDecodeError) as err:
        if "appear more than once" in str(err):
            raise
        raise ValueError(f"not valid JSON ({str(err)[:120]})") from None
    if not isinstance(data, dict):
        raise ValueError(
            "the file must hold a JSON object with keys 'inputs' and 'targets', "
            f"got a JSON {type(data).__name__}"
        )
    missing = {"inputs", "targets"} - set(data)
    if missing:
        raise ValueError(f"missing key(s) {sorted(missing)}")
    extra = set(data) - {"inputs", "targets", "tau"}
    if extra:
        shown = sorted(str(k)[:30] for k in extra)[:5]
        raise ValueError(f"unknown key(s) {shown}; allowed: inputs, targets, tau")
    budget = [MAX_ENTRIES]
    inputs = _json_sequences(data["inputs"], "inputs", budget)
    targets = _json_sequences(data["targets"], "targets", budget)
    tau = None if data.get("tau") is None else _json_number(data["tau"], "tau")
    return inputs, targets, tau


_HEADERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}


def _npz_shapes(path: Path) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Shape and dtype of every array of an NPZ file, read from the headers (no data loaded)."""
    shapes = {}
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            name = info.filename
            if not name.endswith(".npy"):
                raise ValueError(f"the member {name[:40]!r} is not an array (.npy)")
            with z.open(info) as f:
                version = np.lib.format.read_magic(f)
                if version not in _HEADERS:
                    raise ValueError(f"array {name[:-4]!r} has the unknown format {version}")
                shape, _, dtype = _HEADERS[version](f)
            shapes[name[:-4]] = (tuple(shape), dtype)
    return shapes


def _read_npz(path: Path) -> tuple[list, list, Fraction | None]:
    try:
        shapes = _npz_shapes(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:
        raise ValueError(f"not a readable NPZ file ({str(err)[:120]})") from None
    N = sum(1 for k in shapes if k.startswith("inputs_"))
    expected = {f"inputs_{j}" for j in range(N)} | {f"targets_{j}" for j in range(N)}
    if N == 0 or not expected <= set(shapes):
        names = sorted(shapes)[:8]
        raise ValueError(
            f"need arrays inputs_0..inputs_{{N-1}} and targets_0..targets_{{N-1}}, got {names}"
            + (" ..." if len(shapes) > 8 else "")
        )
    extra = set(shapes) - expected - {"denominator", "tau"}
    if extra:
        raise ValueError(f"unknown array(s) {sorted(extra)[:5]}")
    for k, (shape, dtype) in shapes.items():
        if dtype.kind not in "iu":
            raise ValueError(f"array {k!r} has dtype {dtype}; store integers (and a 'denominator')")
        if k in ("denominator", "tau") and shape != ():
            raise ValueError(
                f"array {k!r} must be a single integer (shape ()), got shape {shape}: "
                f"save it as np.int64(...)"
            )
        if k not in ("denominator", "tau") and len(shape) != 2:
            raise ValueError(f"array {k!r} must have shape [n_j, d], got shape {shape}")
    if sum(math.prod(shape) for shape, _ in shapes.values()) > MAX_ENTRIES:
        raise ValueError(f"more than {MAX_ENTRIES} numbers (sxor.interp.datafile.MAX_ENTRIES)")
    try:
        with np.load(path, allow_pickle=False) as f:
            arrays = {k: f[k] for k in f.files}
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:
        raise ValueError(f"not a readable NPZ file ({str(err)[:120]})") from None
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
    return inputs, targets, tau


def load_dataset(path: str | Path) -> tuple[list[np.ndarray], list[np.ndarray], Fraction | None]:
    r"""Read and check a dataset file; return ``(inputs, targets, tau)`` (``tau`` ``None`` if absent).

    Parameters
    ----------
    path
        A ``.json`` or ``.npz`` file in the formats of :mod:`sxor.interp.datafile`.

    Raises
    ------
    ValueError
        naming the file and the reason, in one line: unknown suffix, missing, unreadable, too large
        or malformed file (ragged tokens, nesting, duplicate keys, array shapes), missing keys,
        floats, numbers beyond the limits, and every dataset
        :func:`~sxor.interp.dataset.check_dataset` refuses.
    """
    if not isinstance(path, (str, Path)):
        raise TypeError(f"path must be a str or pathlib.Path, got {type(path).__name__}")
    path = Path(path)
    try:
        if not path.exists():
            raise ValueError("no such file")
        if not path.is_file():
            raise ValueError("not a regular file" + (" (a folder)" if path.is_dir() else ""))
        suffix = path.suffix.lower()
        if suffix not in (".json", ".npz"):
            raise ValueError(f"unknown format {suffix or '(no suffix)'!r}: use .json or .npz")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ValueError(
                f"the file has {size} bytes, above sxor.interp.datafile.MAX_FILE_BYTES = "
                f"{MAX_FILE_BYTES}"
            )
        inputs, targets, tau = _read_json(path) if suffix == ".json" else _read_npz(path)
        X, Y = check_dataset(inputs, targets)
    except OSError as err:
        raise ValueError(f"{path}: cannot read the file ({err.strerror or err})") from None
    except (ValueError, TypeError) as err:
        raise ValueError(f"{path}: {err}") from None
    return X, Y, tau


def certify_cost(inputs: list[np.ndarray], targets: list[np.ndarray]) -> int:
    r"""An estimate of the work of building and certifying the softmax network, in cost units.

    .. math::
       &d \Big( f \sum_j n_j^2 + 16\,(2N + \textstyle\sum_j m_j) \sum_j n_j \Big), \\
       &f = \max(1, \lfloor b / 64 \rfloor)^2,

    with :math:`b` the largest bit length of a numerator or denominator of the data: the collapse
    compares every pair of tokens of a sequence (quadratic in :math:`n_j`, and slower on numbers
    beyond the float range), and every one of the :math:`O(N + \sum_j m_j)` blocks acts on every
    token. Calibrated on random datasets (one sequence of 3200 tokens; 200 sequences of 5; numbers
    of 1000 digits): one unit took 1 to 3 microseconds on one CPU core (measured), so it is an
    order of magnitude, not a promise.

    Parameters
    ----------
    inputs, targets
        The dataset, as :func:`load_dataset` returns it.
    """
    if not inputs or len(inputs) != len(targets):
        raise ValueError(
            f"certify_cost needs N >= 1 input and as many target sequences, got {len(inputs)} and "
            f"{len(targets)} (pass what load_dataset returns)"
        )
    d = int(inputs[0].shape[1])
    bits = max(
        (max(v.numerator.bit_length(), v.denominator.bit_length()) for s in inputs for v in s.flat),
        default=1,
    )
    f = max(1, bits // 64) ** 2
    K = sum(int(x.shape[0]) for x in inputs)
    pairs = sum(int(x.shape[0]) ** 2 for x in inputs)
    blocks = 2 * len(inputs) + sum(int(y.shape[0]) for y in targets)
    return d * (f * pairs + 16 * blocks * K)
