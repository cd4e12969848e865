r"""The two-layer ReLU network baseline of the chapter "Why a transformer: parameters against d".

The network is

.. math::  f(x) = \sum_{k=1}^{w} a_k\,\mathrm{relu}(W_k\cdot x + b_k) + c,

with ``W [R, w, d]``, ``b [R, w]``, ``a [R, w]``, ``c [R]`` for :math:`R` independent restarts
batched along a leading axis: :math:`w (d + 2) + 1` parameters per restart.
:func:`~sxor.xor.ffnn.train_ffnn` trains networks of *several* widths and restarts in one tensor
computation (every width's hidden units side by side, one batched matrix product per layer, a
hand-written backward pass and Adam), online (a fresh batch from
:func:`sxor.xor.data.sample_sparse_xor`'s distribution at every step) on the transformer's loss
:math:`\frac{1}{2} (f(x) - y)^2`, and evaluates them on fresh test samples.
:func:`~sxor.xor.ffnn.width_records` turns its outcome into per-width success rates and sample
counts, and ``WIDTH1_LOSS_FLOOR`` is the population loss that no width-1 network can beat.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch

from ._ffnn_fit import fit_stacked
from .checks import (
    ArgumentTypeError,
    as_support,
    check_dims,
    check_dtype,
    check_int,
    check_real,
    check_support,
    check_tensor,
)

#: Adam's constants ``beta1, beta2, eps``, PyTorch's defaults.
ADAM = (0.9, 0.999, 1e-8)
#: The loss no width-1 network can go below, at any ``d`` (the chapter's proposition).
WIDTH1_LOSS_FLOOR = 1 / 3


class FFNNParams(NamedTuple):
    r"""Parameters of :math:`R` two-layer ReLU networks of width :math:`w` on :math:`d` inputs."""

    W: torch.Tensor  #: first-layer weights ``[R, w, d]``
    b: torch.Tensor  #: first-layer biases ``[R, w]``
    a: torch.Tensor  #: output weights ``[R, w]``
    c: torch.Tensor  #: output bias ``[R]``


def parameter_count(d: int, width: int) -> int:
    r"""Trainable parameters of one width-:math:`w` network on :math:`d` inputs: :math:`w d + w + w + 1`.

    Parameters
    ----------
    d
        Input dimension.
    width
        Hidden width :math:`w`.
    """
    check_dims(d)
    check_int("width", width, 1)
    return width * (d + 2) + 1


def init_ffnn(
    d: int,
    width: int,
    *,
    restarts: int = 1,
    generator: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> FFNNParams:
    r"""PyTorch's default ``nn.Linear`` initialisation, for ``restarts`` networks.

    Every weight and bias of a layer with ``fan_in`` inputs is uniform on
    :math:`[-1/\sqrt{\mathrm{fan\_in}}, 1/\sqrt{\mathrm{fan\_in}}]`; :math:`c` starts at 0.

    Parameters
    ----------
    d
        Input dimension, at least 2.
    width
        Hidden width, at least 1.
    restarts
        Number :math:`R` of independent networks, at least 1.
    generator
        Random generator to draw from.
    dtype
        Real floating dtype of the parameters.
    device
        Device of the parameters.

    Raises
    ------
    ArgumentTypeError
        unless ``d``, ``width``, ``restarts`` are integers and ``dtype`` real floating.
    ValueError
        unless ``d >= 2`` and ``width, restarts >= 1``.
    """
    check_dims(d)
    check_dtype("dtype", dtype)
    check_int("width", width, 1)
    check_int("restarts", restarts, 1)

    def uniform(*shape: int, fan_in: int) -> torch.Tensor:
        u = torch.rand(*shape, generator=generator, dtype=dtype, device=device)
        return (2 * u - 1) / math.sqrt(fan_in)

    return FFNNParams(
        W=uniform(restarts, width, d, fan_in=d),
        b=uniform(restarts, width, fan_in=d),
        a=uniform(restarts, width, fan_in=width),
        c=torch.zeros(restarts, dtype=dtype, device=device),
    )


def ffnn_forward(x: torch.Tensor, params: FFNNParams) -> torch.Tensor:
    r"""Network output :math:`f(x) = a \cdot \mathrm{relu}(W x + b) + c`, shape ``[R, n]``.

    Parameters
    ----------
    x
        Inputs ``[n, d]`` (shared by the restarts) or ``[R, n, d]``.
    params
        The parameters of the :math:`R` networks.

    Raises
    ------
    ArgumentTypeError
        unless ``params`` is an :class:`~sxor.xor.ffnn.FFNNParams` and ``x`` a real tensor.
    ValueError
        unless ``x`` is finite with last dimension ``d``.
    """
    if not isinstance(params, FFNNParams):
        raise ArgumentTypeError(f"params must be FFNNParams, got {type(params).__name__}")
    check_tensor("x", x, 2, finite=True)
    check_dtype("x", x.dtype, integer=True)
    if x.shape[-1] != params.W.shape[-1]:
        raise ValueError(
            f"x has last dimension {x.shape[-1]} but the network has d={params.W.shape[-1]} inputs"
        )
    hidden = torch.relu(x.to(params.W.dtype) @ params.W.transpose(-1, -2) + params.b.unsqueeze(-2))
    return (hidden @ params.a.unsqueeze(-1)).squeeze(-1) + params.c.unsqueeze(-1)


def ffnn_loss(
    x: torch.Tensor, y: torch.Tensor, params: FFNNParams
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Mean loss :math:`\frac{1}{2n} \sum_k (f(x_k) - y_k)^2` per restart ``[R]``, and its standard error ``[R]``.

    Parameters
    ----------
    x
        Inputs ``[n, d]`` or ``[R, n, d]``.
    y
        Labels ``[..., n]``.
    params
        The parameters of the :math:`R` networks.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.ffnn.ffnn_forward` does, and ValueError unless ``y [..., n]`` is finite
        and real.
    """
    check_tensor("y", y, 1, finite=True)
    check_dtype("y", y.dtype, integer=True)
    if y.shape[-1:] != x.shape[-2:-1]:
        raise ValueError(f"y must have shape [..., n] with n={x.shape[-2]}, got {tuple(y.shape)}")
    per_sample = 0.5 * (ffnn_forward(x, params) - y.to(params.W.dtype)) ** 2
    return per_sample.mean(-1), per_sample.std(-1) / math.sqrt(per_sample.shape[-1])


def exact_xor_network(
    d: int,
    support: tuple[int, int],
    *,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> FFNNParams:
    r"""A width-2 network equal to :math:`y = -x_a x_b` on the whole hypercube.

    .. math::
       \begin{aligned}
       &\mathrm{relu}(x_a - x_b) + \mathrm{relu}(x_b - x_a) - 1\\
       &\qquad = |x_a - x_b| - 1.
       \end{aligned}

    Parameters
    ----------
    d
        Input dimension.
    support
        The pair :math:`(a, b)`.
    dtype
        Real floating dtype of the parameters.
    device
        Device of the parameters.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.data.sample_sparse_xor` does for ``d``, ``support`` and ``dtype``.
    """
    a_, b_ = _one_pair(d, support, dtype)
    W = torch.zeros(1, 2, d, dtype=dtype, device=device)
    W[0, 0, a_], W[0, 0, b_], W[0, 1, a_], W[0, 1, b_] = 1.0, -1.0, -1.0, 1.0
    zeros = torch.zeros(1, 2, dtype=dtype, device=device)
    ones = torch.ones(1, 2, dtype=dtype, device=device)
    return FFNNParams(W, zeros, ones, -torch.ones(1, dtype=dtype, device=device))


def width1_loss_floor_network(
    d: int,
    support: tuple[int, int],
    *,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> FFNNParams:
    r"""A width-1 network with population loss exactly ``WIDTH1_LOSS_FLOOR`` :math:`= 1/3`.

    :math:`\frac{4}{3} \mathrm{relu}(x_a - x_b - 1) - \frac{1}{3}`, which is right on the inputs with
    :math:`x_a = -x_b = 1` and predicts :math:`-1/3` on the other three quarters of the cube.

    Parameters
    ----------
    d, support, dtype, device
        As in :func:`~sxor.xor.ffnn.exact_xor_network`.

    Raises
    ------
    ArgumentTypeError, ValueError
        as :func:`~sxor.xor.ffnn.exact_xor_network` does.
    """
    a_, b_ = _one_pair(d, support, dtype)
    W = torch.zeros(1, 1, d, dtype=dtype, device=device)
    W[0, 0, a_], W[0, 0, b_] = 1.0, -1.0
    return FFNNParams(
        W,
        -torch.ones(1, 1, dtype=dtype, device=device),
        torch.full((1, 1), 4 / 3, dtype=dtype, device=device),
        torch.full((1,), -1 / 3, dtype=dtype, device=device),
    )


class WidthRuns(NamedTuple):
    r"""Outcome of :func:`~sxor.xor.ffnn.train_ffnn`: one row per width, one column per restart."""

    d: int  #: input length
    widths: tuple[int, ...]  #: the widths trained, in the order of the rows
    batch: int  #: fresh training samples per step and restart
    max_steps: int  #: the step budget
    target: float  #: the loss a run must reach
    steps: (
        torch.Tensor
    )  #: first check below ``target`` on validation *and* test set, ``-1`` if none, ``[W, R]``
    test_loss: torch.Tensor  #: loss of the returned parameters on the test set, ``[W, R]``
    test_loss_se: torch.Tensor  #: its standard error, ``[W, R]``
    params: list[
        FFNNParams
    ]  #: for each width, the parameters when the run stopped, else the final ones
    rejected: (
        torch.Tensor
    )  #: checks at which validation was below ``target`` but the test set was not, ``[W, R]``
    held_out_loss: (
        torch.Tensor
    )  #: loss of the returned parameters on a third, untouched sample set, ``[W, R]``
    held_out_se: torch.Tensor  #: its standard error, ``[W, R]``

    @property
    def success(self) -> torch.Tensor:
        """Whether the run stopped, i.e. was below ``target`` on the validation and the test set at
        one check, ``[W, R]``."""
        return self.steps > 0

    @property
    def samples(self) -> torch.Tensor:
        """Fresh training samples seen until the run stopped, ``steps * batch``, or ``-1``, ``[W, R]``."""
        return torch.where(self.steps > 0, self.steps * self.batch, self.steps)


def train_ffnn(
    d: int,
    widths: int | Sequence[int],
    support: tuple[int, int] | torch.Tensor,
    *,
    restarts: int = 10,
    max_steps: int = 20000,
    batch: int = 256,
    lr: float = 1e-2,
    target: float = 0.01,
    eval_every: int = 25,
    n_val: int = 2048,
    n_test: int = 8192,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> WidthRuns:
    r"""Train ``restarts`` networks of each width in ``widths`` online on :math:`y = -x_a x_b` with Adam.

    Restart :math:`r` has its own stream of fresh training batches (``batch`` samples per step), its
    own validation set (``n_val``) and test set (``n_test``), shared by its networks of every width;
    every (width, restart) has its own initialisation (:func:`~sxor.xor.ffnn.init_ffnn`, generator
    seeded by ``seed`` and the width). Restarts are therefore independent in data and
    initialisation, and a width's results do not depend on which other widths are trained beside
    it. All networks are trained together: the hidden units of every width sit side by side, so a
    step is one batched matrix product per layer, with the backward pass and Adam (PyTorch's default
    constants, ``ADAM``) written out.

    Every ``eval_every`` steps each network's loss on its validation set is checked; a network whose
    validation loss is below ``target`` is then checked on its test set, and it *stops* (its
    parameters are kept, ``steps`` records the check) only if that loss is below ``target`` too. A
    network that passes validation but not the test check keeps training (``rejected`` counts such
    checks), so a run that merely grazes ``target`` is not counted as a failure at an early step:
    every run either stops on a confirmed loss below ``target`` or trains to the budget
    ``max_steps``. Training ends when every network has stopped or after ``max_steps``. Because the
    test set takes part in stopping, the kept parameters are finally evaluated on a third sample set
    of size ``n_test`` that played no part in training or stopping (``held_out_loss``). The loop runs
    on one CPU thread (restored afterwards): its tensors are too small to share.

    Parameters
    ----------
    d
        Input dimension, at least 2.
    widths
        One width or a sequence of distinct widths, each at least 1.
    support
        The pair :math:`(a, b)`.
    restarts
        Independent restarts per width.
    max_steps
        Step budget.
    batch
        Fresh training samples per step.
    lr
        Adam learning rate, finite and :math:`> 0`.
    target
        Loss below which a network stops, finite and :math:`> 0`.
    eval_every
        Steps between validation checks.
    n_val
        Size of each restart's validation set.
    n_test
        Size of each restart's test set and of its held-out set.
    seed
        Seed of the data streams and initialisations.
    dtype
        Real floating dtype.
    device
        Device of the computation.

    Raises
    ------
    ArgumentTypeError
        unless the sizes, the widths and ``seed`` are integers, ``lr`` and ``target`` real and
        ``dtype`` real floating.
    ValueError
        unless the sizes and widths are ``>= 1`` (``d >= 2``), the widths distinct, ``lr`` and
        ``target`` finite and ``> 0`` and ``support`` one valid pair.
    """
    check_dims(d)
    check_dtype("dtype", dtype)
    check_int("seed", seed, 0)
    lr = check_real("lr", lr, minimum=0, strict=True)
    target = check_real("target", target, minimum=0, strict=True)
    widths = (widths,) if isinstance(widths, int) else tuple(widths)
    if not widths:
        raise ValueError("widths must name at least one width")
    widths = tuple(check_int("width", w, 1) for w in widths)
    if len(set(widths)) != len(widths):
        raise ValueError(f"widths must be distinct, got {list(widths)}")
    for name, value in [
        ("restarts", restarts),
        ("max_steps", max_steps),
        ("batch", batch),
        ("eval_every", eval_every),
        ("n_val", n_val),
        ("n_test", n_test),
    ]:
        check_int(name, value, 1)
    support = as_support(support, device)
    check_support(support, d)
    if support.shape != (2,):
        raise ValueError(f"train_ffnn takes one support of shape (2,), got {tuple(support.shape)}")

    R, nW = restarts, len(widths)
    inits = [
        init_ffnn(
            d,
            w,
            restarts=R,
            generator=torch.Generator().manual_seed(1_000_003 * seed + w),
            dtype=dtype,
        )
        for w in widths
    ]
    # hidden units of every width side by side: W [R, U, d], b [R, U], a [R, U], c [R, nW]
    W = torch.cat([p.W for p in inits], 1).to(device)
    b = torch.cat([p.b for p in inits], 1).to(device)
    a = torch.cat([p.a for p in inits], 1).to(device)
    c = torch.stack([p.c for p in inits], 1).to(device)
    group = torch.cat([torch.full((w,), k) for k, w in enumerate(widths)]).to(device)
    onehot = torch.nn.functional.one_hot(group, nW).to(
        dtype
    )  # [U, nW]: which width a unit belongs to
    fit = fit_stacked(
        [W, b, a, c],
        group,
        onehot,
        support,
        restarts=R,
        d=d,
        batch=batch,
        max_steps=max_steps,
        lr=lr,
        target=target,
        eval_every=eval_every,
        n_val=n_val,
        n_test=n_test,
        seed=seed,
        adam=ADAM,
        dtype=dtype,
        device=device,
    )
    final = fit.params
    out_params, start = [], 0
    for k, w in enumerate(widths):
        sl = slice(start, start + w)
        out_params.append(
            FFNNParams(
                final[0][:, sl].clone(),
                final[1][:, sl].clone(),
                final[2][:, sl].clone(),
                final[3][:, k].clone(),
            )
        )
        start += w
    return WidthRuns(
        d,
        widths,
        batch,
        max_steps,
        target,
        fit.steps,
        fit.test,
        fit.test_se,
        out_params,
        fit.rejected,
        fit.hold,
        fit.hold_se,
    )


def width_records(runs: WidthRuns) -> list[dict]:
    r"""One record per width of :func:`~sxor.xor.ffnn.train_ffnn`'s outcome.

    Fields: ``d, width, parameters, restarts, successes``, the stopping step of every restart
    (``steps``, ``-1`` for a run censored at the budget), the ``median_samples`` and quartiles of the
    successful runs (``None`` without a success), ``samples_per_success`` (the samples that all
    restarts consumed, failed ones at the full budget, divided by the successes: the cost of one
    success when failures are counted), the median and smallest test loss over restarts,
    ``rejected_runs`` (restarts whose validation loss passed ``target`` at some check where the test
    loss did not, so that they trained on; successful or not), ``held_out_failures`` (successful runs
    whose loss on the untouched third sample set is not below ``target``) and the largest held-out
    loss of a successful run (``None`` without a success).

    Parameters
    ----------
    runs
        The outcome of :func:`~sxor.xor.ffnn.train_ffnn`.
    """
    records = []
    for k, w in enumerate(runs.widths):
        ok = runs.success[k]
        samples = runs.samples[k][ok].double()
        spent = torch.where(runs.steps[k] > 0, runs.steps[k], runs.max_steps).sum() * runs.batch
        quart = (
            torch.quantile(samples, torch.tensor([0.25, 0.5, 0.75], dtype=torch.float64)).tolist()
            if ok.any()
            else None
        )
        records.append(
            {
                "d": runs.d,
                "width": w,
                "parameters": parameter_count(runs.d, w),
                "restarts": int(ok.numel()),
                "successes": int(ok.sum()),
                "steps": [int(s) if bool(o) else -1 for s, o in zip(runs.steps[k], ok)],
                "median_samples": quart[1] if quart else None,
                "samples_quartiles": quart,
                "samples_per_success": float(spent) / int(ok.sum()) if ok.any() else None,
                "median_test_loss": float(runs.test_loss[k].median()),
                "min_test_loss": float(runs.test_loss[k].min()),
                "rejected_runs": int((runs.rejected[k] > 0).sum()),
                "held_out_failures": int((ok & (runs.held_out_loss[k] >= runs.target)).sum()),
                "max_held_out_loss": float(runs.held_out_loss[k][ok].max()) if ok.any() else None,
            }
        )
    return records


def smallest_reliable_width(records: list[dict], rate: float) -> dict[int, dict]:
    r"""``{d: record of the smallest width whose success rate is >= rate}``.

    A ``d`` where no width reaches ``rate`` is absent.

    Parameters
    ----------
    records
        Records from :func:`~sxor.xor.ffnn.width_records`.
    rate
        Required success rate in :math:`(0, 1]`; any rate at most ``1 / restarts`` asks for one
        successful restart.
    """
    if not 0 < rate <= 1:
        raise ValueError(f"rate must lie in (0, 1], got {rate}")
    out: dict[int, dict] = {}
    for r in sorted(records, key=lambda r: (r["d"], r["width"])):
        if r["d"] not in out and r["successes"] >= rate * r["restarts"] - 1e-12:
            out[r["d"]] = r
    return out


def _one_pair(d: int, support: object, dtype: torch.dtype) -> tuple[int, int]:
    check_dims(d)
    check_dtype("dtype", dtype)
    support = as_support(support)
    check_support(support, d)
    if support.shape != (2,):
        raise ValueError(f"support must be one pair (i*, j*), got shape {tuple(support.shape)}")
    return int(support[0]), int(support[1])
