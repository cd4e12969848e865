"""Part II: exact sequence interpolation with transformers (Alcalde, Fantuzzi & Zuazua,
arXiv 2502.02270).

* :mod:`sxor.interp.exact`: exact rational arithmetic (conversion with one float policy: floats
  are refused unless converted on purpose with ``from_floats``; dot products, means, projections).
* :mod:`sxor.interp.layers`: the ReLU feed-forward and hardmax/softmax self-attention layers and
  the Hausdorff distance, in float and in exact rational arithmetic.
* :mod:`sxor.interp.clustering`: repeated attention as a clustering dynamics, leaders.
* :mod:`sxor.interp.lemmas`: the three collapse lemmas (constructions, predictions, checks,
  random admissible instances).
* :mod:`sxor.interp.softmax`: softmax near hardmax (gaps, collapse bounds) and snap layers.
* :mod:`sxor.interp.enclosures`: rigorous rational enclosures (softmax attention, FF and mean
  attention on boxes) that the certificate uses.
* :mod:`sxor.interp.network`, :mod:`sxor.interp.hats`, :mod:`sxor.interp.dataset`,
  :mod:`sxor.interp.construct`, :mod:`sxor.interp.certificate`: this book's exact interpolation
  construction (hardmax, and softmax exact below a temperature ``tau_max``), its layers, dataset
  checks, phases, counts, and the rigorous softmax certificate.
* :mod:`sxor.interp.baseline`: the ResNet-on-flattened-sequences interpolation baseline.
* :mod:`sxor.interp.training`: the regularised (Tikhonov) training experiment.
* :mod:`sxor.interp.plots`: drawings of 2-D token clouds.
* :mod:`sxor.interp.schematic`: the four phases of the construction in the plane (chapter 13).
"""

from .clustering import attention_trajectory, convex_hull_2d, distinct_points, leaders
from .construct import (
    InterpolatingTransformer,
    check_dataset,
    construct,
    interpolation_errors,
    random_dataset,
    softmax_certificate,
)
from .enclosures import feed_forward_enclosure, softmax_attention_enclosure
from .layers import (
    as_exact,
    attention_scores,
    attention_weights,
    feed_forward,
    hausdorff,
    hausdorff_squared,
    is_exact,
    self_attention,
)
from .lemmas import identity_layer, identity_matrix, rank_one_layer
from .softmax import snap_layer

__all__ = [
    "InterpolatingTransformer",
    "as_exact",
    "attention_scores",
    "attention_trajectory",
    "attention_weights",
    "check_dataset",
    "construct",
    "convex_hull_2d",
    "distinct_points",
    "feed_forward",
    "feed_forward_enclosure",
    "hausdorff",
    "hausdorff_squared",
    "identity_layer",
    "identity_matrix",
    "interpolation_errors",
    "is_exact",
    "leaders",
    "random_dataset",
    "rank_one_layer",
    "self_attention",
    "snap_layer",
    "softmax_attention_enclosure",
    "softmax_certificate",
]
