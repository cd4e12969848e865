"""sxor: the code behind the executable lecture notes.

* :mod:`sxor.xor`: Part I, sparse XOR with two-head softmax attention (Han & Ghoshdastidar,
  arXiv 2502.07553v2);
* :mod:`sxor.interp`: Part II, exact sequence interpolation (Alcalde, Fantuzzi & Zuazua,
  arXiv 2502.02270), independent of Part I;
* the book's machinery at the top: :mod:`sxor.book` (set-up and print helpers),
  :mod:`sxor.results` (results files), :mod:`sxor.progress`, :mod:`sxor.experiments` (the named
  sweeps and their runner) and :mod:`sxor.cli` (``python -m sxor``).

The most used Part I functions are re-exported here (``sxor.one_step``, ``sxor.predict``, ...),
and ``sxor.__version__``, the version of the package and of the book (``sxor/_version.py``).
"""

from . import book as book  # the set-up helpers, re-exported: sxor.book.setup() in every chapter
from ._version import __version__ as __version__
from .book import default_device
from .xor.data import (
    all_inputs,
    random_support,
    sample_sparse_xor,
    sparse_xor_labels,
    sphere_embeddings,
)
from .xor.model import ATTENTION_KINDS, attention, predict, predict_from_weights, scores
from .xor.population import (
    OneStepResult,
    grad_from_weights,
    loss_from_weights,
    one_step,
    population_grad,
    population_loss,
)

__all__ = [
    "ATTENTION_KINDS",
    "OneStepResult",
    "all_inputs",
    "attention",
    "default_device",
    "grad_from_weights",
    "loss_from_weights",
    "one_step",
    "population_grad",
    "population_loss",
    "predict",
    "predict_from_weights",
    "random_support",
    "sample_sparse_xor",
    "scores",
    "sparse_xor_labels",
    "sphere_embeddings",
]
