"""sxor: the code behind the executable lecture notes.

Part I (sparse XOR with two-head softmax attention; Han & Ghoshdastidar, arXiv 2502.07553v2):
pure tensor functions, batched over leading dimensions, float64 by default, on any device.

Part II (exact sequence interpolation; Alcalde, Fantuzzi & Zuazua, arXiv 2502.02270) lives in
:mod:`sxor.interp` and does not depend on Part I.
"""

from . import book, metrics, reference, sphere, sweeps
from .data import all_inputs, default_device, random_support, sample_sparse_xor, sparse_xor_labels, sphere_embeddings
from .model import ATTENTION_KINDS, attention, predict, predict_from_weights, scores
from .population import (
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
