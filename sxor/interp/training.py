"""Regularised training of a one-block softmax transformer on exactly interpolable data (chapter 15).

The authors' Tikhonov experiment (``tikhonov/`` in github.com/DCN-FAU-AvH/exactInterpTF), rebuilt on
the layers of :mod:`sxor.interp.layers`:

* data: ``X_j`` with i.i.d. ``U[0, 1]`` entries, ``[n, d]``; one target point per sequence,
  ``y_j = FF*(mean(X_j))``, produced by the known block ``theta*``: an SA layer with ``A = 0``,
  ``rho = 0``, ``V = I`` (the exact sequence mean for every temperature), then an FF layer with
  ``eta = 1`` and ``W, U, b`` i.i.d. ``U[0, 1]`` (width 4);
* model: one block SA -> FF (the order of the authors' experiment code), softmax SA with rank-one
  ``A = q k^T`` at ``tau = 1``, scalar ``rho``, full ``V``, FF of width 4 with scalar ``eta``;
* loss: ``J(theta) = (1/N) sum_j max_i |T_theta(X_j)_i - y_j|^2`` (squared Hausdorff distance to
  the singleton ``{y_j}``);
* training: Adam with coupled weight decay ``epsilon`` (``torch.optim.Adam(weight_decay=eps)``,
  i.e. the gradient of ``J_eps = J + (eps/2) |theta|^2``), learning rate cosine-annealed to 0 over
  the run, full batch; the authors' sweep warm-starts one model through decreasing ``epsilon``
  (a fresh optimiser and schedule per ``epsilon``, the parameters carried over):
  :func:`warm_start_sweep`.

Theory (proved in chapter 15): a global minimiser ``theta_eps`` of ``J_eps`` has
``J(theta_eps) <= J_eps(theta_eps) <= (eps/2)|theta_dagger|^2`` where ``theta_dagger`` is a
minimum-norm exact interpolant, ``|theta_eps| -> |theta_dagger|``, and so ``J(theta_eps) = o(eps)``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction

import torch

from ..progress import progress

#: The names of one block's parameters, in the order of the parameter dict.
PARAMETER_NAMES = ("q", "k", "rho", "V", "eta", "W", "U", "b")


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {value!r} of type {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return int(value)


def _real(
    name: str, value: object, *, minimum: float | None = None, positive: bool = False
) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a real number, got {value!r} of type {type(value).__name__}"
        )
    x = float(value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    if positive and x <= 0:
        raise ValueError(f"{name} must be > 0, got {x}")
    if minimum is not None and x < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {x}")
    return x


@dataclass
class TikhonovData:
    """Inputs ``X [N, n, d]``, targets ``Y [N, 1, d]`` and the exact interpolant ``theta_star``."""

    X: torch.Tensor
    Y: torch.Tensor
    theta_star: dict[str, torch.Tensor]

    @property
    def theta_star_sq_norm(self) -> float:
        """``|theta*|^2``: the sum of squares of all its parameters (``q = k = rho = 0``)."""
        return float(sum((p.double() ** 2).sum() for p in self.theta_star.values()))


def _check_theta(theta: object, X: torch.Tensor) -> None:
    if not isinstance(theta, dict) or set(theta) != set(PARAMETER_NAMES):
        got = sorted(theta) if isinstance(theta, dict) else type(theta).__name__
        raise ValueError(f"theta must be a dict with the keys {list(PARAMETER_NAMES)}, got {got}")
    d = X.shape[-1]
    for name in PARAMETER_NAMES:
        p = theta[name]
        if not isinstance(p, torch.Tensor) or not p.is_floating_point():
            raise TypeError(
                f"theta[{name!r}] must be a float tensor, got {type(p).__name__}"
                + (f" of dtype {p.dtype}" if isinstance(p, torch.Tensor) else "")
            )
        if p.dtype != X.dtype:
            raise TypeError(
                f"theta[{name!r}] has dtype {p.dtype} but X has {X.dtype}; use one dtype"
            )
    w = theta["W"].shape[-1] if theta["W"].ndim == 2 else -1
    expected = {
        "q": (d,),
        "k": (d,),
        "rho": (),
        "V": (d, d),
        "eta": (),
        "W": (d, w),
        "U": (w, d),
        "b": (w,),
    }
    for name, shape in expected.items():
        if tuple(theta[name].shape) != shape:
            raise ValueError(
                f"theta[{name!r}] must have shape {shape} for token dimension d = {d} and FF width "
                f"w = {w}, got {tuple(theta[name].shape)}"
            )
        if not bool(torch.isfinite(theta[name].detach()).all()):
            raise ValueError(f"theta[{name!r}] contains nan or inf")


def _check_X(X: object) -> torch.Tensor:
    if not isinstance(X, torch.Tensor) or not X.is_floating_point():
        raise TypeError(
            f"X must be a float tensor [N, n, d], got {type(X).__name__}"
            + (f" of dtype {X.dtype}" if isinstance(X, torch.Tensor) else "")
        )
    if X.ndim != 3 or min(X.shape) < 1:
        raise ValueError(f"X must have shape [N, n, d] with N, n, d >= 1, got {tuple(X.shape)}")
    if not bool(torch.isfinite(X).all()):
        raise ValueError("X contains nan or inf")
    return X


def _seed(seed: object) -> int:
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise TypeError(f"seed must be an int, got {seed!r} of type {type(seed).__name__}")
    return int(seed)


def block(X: torch.Tensor, theta: dict[str, torch.Tensor], tau: float = 1.0) -> torch.Tensor:
    """One block SA -> FF, ``FF(SA(X))``, with rank-one ``A = q k^T`` and softmax at ``tau``:

    ``SA(X)_i = rho x_i + V sum_l pi_il x_l`` with ``pi_i = softmax_l(<A x_i, x_l> / tau)``, and
    ``FF(z) = eta z + W relu(U z + b)``. This equals ``feed_forward(self_attention(X, q k^T, rho, V,
    tau), eta, W, U, b)`` of :mod:`sxor.interp.layers` (tested) but uses the rank-one form of the
    scores, ``<A x_i, x_l> = (k . x_i)(q . x_l)``, and skips the validation of the layers, so that
    a training step costs about a millisecond.

    Accepts ``X`` a float tensor ``[N, n, d]`` and ``theta`` a dict of float tensors of ``X``'s
    dtype with the keys :data:`PARAMETER_NAMES` and shapes ``q, k [d]``, ``rho, eta []``,
    ``V [d, d]``, ``W [d, w]``, ``U [w, d]``, ``b [w]``; ``tau > 0`` finite. Anything else raises
    ``TypeError``/``ValueError`` naming the argument (and the dimensions, for a shape mismatch).
    """
    X = _check_X(X)
    _check_theta(theta, X)
    tau = _real("tau", tau, positive=True)
    return _block(X, theta, tau)


def _block(X: torch.Tensor, theta: dict[str, torch.Tensor], tau: float) -> torch.Tensor:
    S = (X @ theta["k"]).unsqueeze(-1) * (X @ theta["q"]).unsqueeze(-2)
    Z = theta["rho"] * X + (torch.softmax(S / tau, dim=-1) @ X) @ theta["V"].T
    return theta["eta"] * Z + torch.relu(Z @ theta["U"].T + theta["b"]) @ theta["W"].T


def _loss(
    X: torch.Tensor, Y: torch.Tensor, theta: dict[str, torch.Tensor], tau: float
) -> torch.Tensor:
    return ((_block(X, theta, tau) - Y) ** 2).sum(-1).amax(-1).mean()


def loss(
    X: torch.Tensor, Y: torch.Tensor, theta: dict[str, torch.Tensor], tau: float = 1.0
) -> torch.Tensor:
    """``J(theta) = mean_j max_i |T_theta(X_j)_i - y_j|^2``, the mean squared Hausdorff distance
    from the output tokens to the singleton targets, for ``X [N, n, d]`` and ``Y [N, 1, d]`` (same
    dtype). Differentiable in ``theta``; arguments as in :func:`block`."""
    X = _check_X(X)
    _check_theta(theta, X)
    tau = _real("tau", tau, positive=True)
    if (
        not isinstance(Y, torch.Tensor)
        or Y.dtype != X.dtype
        or tuple(Y.shape) != (X.shape[0], 1, X.shape[2])
    ):
        got = f"{tuple(Y.shape)} {Y.dtype}" if isinstance(Y, torch.Tensor) else type(Y).__name__
        raise ValueError(
            f"Y must be a {X.dtype} tensor of shape [N, 1, d] = {(X.shape[0], 1, X.shape[2])}, got {got}"
        )
    if not bool(torch.isfinite(Y).all()):
        raise ValueError("Y contains nan or inf")
    return _loss(X, Y, theta, tau)


def tikhonov_data(
    N: int = 10,
    n: int = 100,
    d: int = 16,
    width: int = 4,
    *,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> TikhonovData:
    """The authors' dataset: ``X ~ U[0,1]^(N x n x d)``, ``y_j = FF*(SA*(X_j))`` (see module doc).

    ``N, n, d, width`` positive ints (a float, even ``6.0``, is refused), ``dtype`` a float dtype."""
    N, n, d, width = (
        _positive_int(k, v) for k, v in (("N", N), ("n", n), ("d", d), ("width", width))
    )
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    gen = torch.Generator(device=device or "cpu").manual_seed(_seed(seed))
    kw = {"dtype": dtype, "device": device}
    X = torch.rand(N, n, d, generator=gen, **kw)
    theta = {
        "q": torch.zeros(d, **kw),
        "k": torch.zeros(d, **kw),
        "rho": torch.zeros((), **kw),
        "V": torch.eye(d, **kw),
        "eta": torch.ones((), **kw),
        "W": torch.rand(d, width, generator=gen, **kw),
        "U": torch.rand(width, d, generator=gen, **kw),
        "b": torch.rand(width, generator=gen, **kw),
    }
    Y = block(X, theta)[:, :1, :]  # every token of T*(X_j) is the same point y_j
    return TikhonovData(X, Y, theta)


def init_parameters(
    d: int,
    width: int = 4,
    *,
    seed: int = 0,
    scale: float = 1.0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> dict[str, torch.Tensor]:
    """PyTorch-default initialisation of the authors' ``nn.Linear`` layers: every matrix and bias
    ``U[-s/sqrt(fan_in), s/sqrt(fan_in)]`` with ``s = scale``; ``rho = eta = 0``.

    ``d, width`` positive ints, ``scale >= 0`` finite, ``dtype`` a float dtype."""
    d, width = _positive_int("d", d), _positive_int("width", width)
    scale = _real("scale", scale, minimum=0.0)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    gen = torch.Generator(device=device or "cpu").manual_seed(_seed(seed))
    kw = {"dtype": dtype, "device": device}

    def uniform(shape, fan_in):
        return (2 * torch.rand(*shape, generator=gen, **kw) - 1) * scale / math.sqrt(fan_in)

    theta = {
        "q": uniform((d,), d),
        "k": uniform((d,), d),
        "rho": torch.zeros((), **kw),
        "V": uniform((d, d), d),
        "eta": torch.zeros((), **kw),
        "W": uniform((d, width), width),
        "U": uniform((width, d), d),
        "b": uniform((width,), d),
    }
    return {name: p.requires_grad_(True) for name, p in theta.items()}


def authors_draw(
    N: int = 10,
    n: int = 100,
    d: int = 16,
    width: int = 4,
    *,
    seed: int = 0,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> tuple[TikhonovData, dict[str, torch.Tensor]]:
    """The data **and** the initialisation exactly as the authors' ``tikhonov/`` scripts draw them.

    Their scripts seed PyTorch's generator with ``seed`` (0 in both), then call
    ``generateSyntheticData`` and build the model, all from that one stream in float32:

    1. ``X = rand(N, n, d)``; then the FF of ``theta*`` in *their* shapes, ``W_a = rand(width, d)``,
       ``U_a = rand(d, width)``, ``b = rand(width)`` (their layer is ``eta z + relu(z U_a + b) W_a``
       on row tokens, so this module's ``W = W_a^T [d, w]`` and ``U = U_a^T [w, d]``); the targets
       are the output of that block with ``eta = 1`` after the mean-collapsing SA (``A = 0``,
       ``rho = 0``, ``V = I``);
    2. the model's ``nn.Linear`` layers in construction order, each weight
       ``kaiming_uniform_(a = sqrt 5)`` (i.e. ``U[-1/sqrt(fan_in), 1/sqrt(fan_in)]``) and each bias
       ``U[-1/sqrt(fan_in), 1/sqrt(fan_in)]``: ``to_q [1, d]``, ``to_k [1, d]``, ``to_v [d, d]``, the
       FF's first layer ``[w, d]`` and its bias ``[w]``, its second layer ``[d, w]``; ``rho = eta = 0``.
       Their score ``to_q(x_i) to_k(x_l)`` is :func:`block`'s ``(k . x_i)(q . x_l)``, so ``k`` is
       their ``to_q`` and ``q`` their ``to_k``.

    The draws are made in float32 (the authors' dtype) from a private ``torch.Generator`` seeded
    with ``seed`` (so the global generator is untouched) and then converted to ``dtype``; so are the targets, computed in float32 as the authors compute them
    (``theta*`` therefore interpolates the data to float32 rounding). (The authors'
    data loader also shuffles the order of the ``N`` sequences in each full batch; that changes the
    batch mean only by rounding and is not reproduced.)

    Parameters
    ----------
    N, n, d, width
        Positive ints: sequences, tokens per sequence, token dimension, FF width (4 in their code).
    seed
        The int their scripts pass to ``torch.manual_seed`` (0).
    dtype, device
        A floating dtype and a device for the returned tensors.

    Returns
    -------
    (TikhonovData, dict)
        The dataset (``Y`` of shape ``[N, 1, d]``, ``theta_star`` with ``q = k = rho = 0``,
        ``V = I``, ``eta = 1``) and the initial parameters (keys :data:`PARAMETER_NAMES`, each
        requiring grad), ready for :func:`train` or :func:`warm_start_sweep`.

    Raises
    ------
    TypeError, ValueError
        For sizes that are not positive ints, a seed that is not an int, or a dtype that is not a
        floating ``torch.dtype``.
    """
    N, n, d, width = (
        _positive_int(k, v) for k, v in (("N", N), ("n", n), ("d", d), ("width", width))
    )
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
    gen = torch.Generator().manual_seed(_seed(seed))
    f32 = torch.float32
    X = torch.rand(N, n, d, generator=gen, dtype=f32)
    W_a = torch.rand(width, d, generator=gen, dtype=f32)
    U_a = torch.rand(d, width, generator=gen, dtype=f32)
    b = torch.rand(width, generator=gen, dtype=f32)

    def linear_weight(out_features, in_features):  # nn.Linear.reset_parameters, weight
        w = torch.empty(out_features, in_features, dtype=f32)
        return torch.nn.init.kaiming_uniform_(w, a=math.sqrt(5), generator=gen)

    def linear_bias(out_features, fan_in):  # nn.Linear.reset_parameters, bias
        bound = 1 / math.sqrt(fan_in)
        return torch.empty(out_features, dtype=f32).uniform_(-bound, bound, generator=gen)

    to_q, to_k, to_v = linear_weight(1, d), linear_weight(1, d), linear_weight(d, d)
    ff1_w, ff1_b, ff2_w = linear_weight(width, d), linear_bias(width, d), linear_weight(d, width)
    kw = {"dtype": dtype, "device": device}
    star = {
        "q": torch.zeros(d, **kw),
        "k": torch.zeros(d, **kw),
        "rho": torch.zeros((), **kw),
        "V": torch.eye(d, **kw),
        "eta": torch.ones((), **kw),
        "W": W_a.T.contiguous().to(**kw),
        "U": U_a.T.contiguous().to(**kw),
        "b": b.to(**kw),
    }
    # their targets, computed as they do (float32, row tokens): the mean-collapsing SA, then the FF;
    # the last token of each sequence (every token is the same point)
    Z = torch.bmm(torch.softmax(torch.zeros(N, n, n, dtype=f32), dim=-1), X)
    Y = (Z + torch.relu(Z @ U_a + b) @ W_a)[:, -1:, :]
    X, Y = X.to(**kw), Y.to(**kw)
    init = {
        "q": to_k[0],
        "k": to_q[0],
        "rho": torch.zeros(()),
        "V": to_v,
        "eta": torch.zeros(()),
        "W": ff2_w,
        "U": ff1_w,
        "b": ff1_b,
    }
    init = {name: init[name].to(**kw).clone().requires_grad_(True) for name in PARAMETER_NAMES}
    return TikhonovData(X, Y, star), init


def perturbed(
    theta: dict[str, torch.Tensor], sigma: float, *, seed: int = 0
) -> dict[str, torch.Tensor]:
    """``theta + sigma * N(0, 1)`` entrywise (a fresh, trainable copy); ``sigma >= 0`` finite,
    ``theta`` a non-empty dict of finite float tensors, ``seed`` an int."""
    sigma = _real("sigma", sigma, minimum=0.0)
    _check_params(theta)
    first = next(iter(theta.values()))
    gen = torch.Generator(device=first.device).manual_seed(_seed(seed))
    return {
        name: (
            p.detach() + sigma * torch.randn(p.shape, generator=gen, dtype=p.dtype, device=p.device)
        ).requires_grad_(True)
        for name, p in theta.items()
    }


def _check_params(theta: object) -> None:
    if not isinstance(theta, dict) or not theta:
        raise TypeError(
            f"theta must be a non-empty dict of float tensors, got {type(theta).__name__}"
        )
    for name, p in theta.items():
        if not isinstance(p, torch.Tensor) or not p.is_floating_point():
            raise TypeError(
                f"theta[{name!r}] must be a float tensor, got "
                + (f"dtype {p.dtype}" if isinstance(p, torch.Tensor) else type(p).__name__)
            )
        if not bool(torch.isfinite(p.detach()).all()):
            raise ValueError(f"theta[{name!r}] contains nan or inf")


def _sq_norm(theta: dict[str, torch.Tensor]) -> float:
    return float(sum((p.detach().double() ** 2).sum() for p in theta.values()))


def sq_norm(theta: dict[str, torch.Tensor]) -> float:
    """``|theta|^2`` over every parameter (accumulated in float64). ``theta`` a non-empty dict of
    finite float tensors; anything else raises ``TypeError``/``ValueError``."""
    _check_params(theta)
    return _sq_norm(theta)


def log_spaced_steps(steps: int, per_decade: int = 40) -> list[int]:
    """The steps ``1..steps`` at which a curve is recorded: about ``per_decade`` per decade, evenly
    spaced in ``log(step)``, always including 1 and ``steps`` (sorted, no repeats)."""
    steps, per_decade = _positive_int("steps", steps), _positive_int("per_decade", per_decade)
    count = math.ceil(math.log10(steps) * per_decade) + 1 if steps > 1 else 1
    out = {1, steps}
    for i in range(count):
        out.add(round(10 ** (i / per_decade)))
    return sorted(s for s in out if 1 <= s <= steps)


def _recorded_steps(record: object, steps: int) -> set[int]:
    if isinstance(record, str) and record.startswith("log"):
        extra = record[3:]
        if extra == "":
            return set(log_spaced_steps(steps))
        if extra.startswith("+") and extra[1:].isdigit() and int(extra[1:]) >= 1:
            every = int(extra[1:])
            return set(log_spaced_steps(steps)) | set(range(every, steps + 1, every))
    elif isinstance(record, numbers.Integral) and not isinstance(record, bool) and record >= 0:
        return set(range(int(record), steps + 1, int(record))) | {1} if record else set()
    raise ValueError(
        f"record must be 'log', 'log+K' (K an int >= 1) or an int >= 0, got {record!r}"
    )


def train(
    data: TikhonovData,
    theta: dict[str, torch.Tensor],
    epsilon: float,
    steps: int,
    *,
    lr: float = 1e-3,
    tau: float = 1.0,
    record: str | int = "log",
) -> dict:
    """Adam (``weight_decay = epsilon``, coupled), learning rate cosine-annealed from ``lr`` to 0
    over ``steps``, full batch: the authors' ``train_model`` with ``batch_size = N``.

    Trains ``theta`` in place. The loss of step ``t`` is evaluated before its update, as the
    authors' per-epoch loss is. Returns

    * ``loss``, ``objective``, ``sq_norm``: ``J``, ``J_eps = J + (eps/2)|theta|^2`` and
      ``|theta|^2`` at the final parameters;
    * ``min_loss``, ``min_objective``: the smallest ``J`` and ``J_eps`` over the run (the
      authors plot the smallest epoch loss);
    * ``grad_norm``: ``|grad J_eps|`` at the final parameters (a measure of stationarity);
    * ``curve``: ``[[step, J, J_eps, |theta|^2], ...]`` at :func:`log_spaced_steps` when
      ``record == "log"``, at those and every ``K`` steps for ``"log+K"``, every ``record`` steps
      for an int, nothing for ``0``.

    ``epsilon >= 0`` and ``lr > 0`` finite reals, ``steps >= 1`` an int; ``theta`` of the data's
    dtype (see :func:`block`), every parameter requiring grad. Anything else raises
    ``TypeError``/``ValueError`` naming the argument, as does a run whose loss becomes nan or inf
    (it names the step)."""
    if not isinstance(data, TikhonovData):
        raise TypeError(
            f"data must be a TikhonovData (from tikhonov_data), got {type(data).__name__}"
        )
    epsilon = _real("epsilon", epsilon, minimum=0.0)
    steps = _positive_int("steps", steps)
    lr = _real("lr", lr, positive=True)
    tau = _real("tau", tau, positive=True)
    _check_theta(theta, data.X)
    wanted = _recorded_steps(record, steps)
    params = [theta[name] for name in PARAMETER_NAMES]
    if not all(p.requires_grad for p in params):
        raise ValueError(
            "every parameter of theta must require grad (init_parameters and perturbed do this)"
        )
    opt = torch.optim.Adam(params, lr=lr, weight_decay=epsilon)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    best, best_obj, curve = math.inf, math.inf, []
    for step in progress(range(1, steps + 1), desc=f"eps={epsilon:g}"):
        opt.zero_grad()
        J = _loss(data.X, data.Y, theta, tau)
        J.backward()
        value = float(J.detach())
        if not math.isfinite(value):
            raise ValueError(
                f"training diverged: J = {value} at step {step} (epsilon = {epsilon}, lr = {lr})"
            )
        norm = _sq_norm(theta) if (step in wanted or epsilon > 0) else 0.0
        objective = value + epsilon / 2 * norm
        best, best_obj = min(best, value), min(best_obj, objective)
        if step in wanted:
            curve.append([step, value, objective, norm])
        opt.step()
        sched.step()
    J = _loss(data.X, data.Y, theta, tau)
    penalty = epsilon / 2 * sum((p**2).sum() for p in params)
    grads = torch.autograd.grad(J + penalty, params)
    final, norm = float(J.detach()), _sq_norm(theta)
    for p in params:
        p.grad = None
    return {
        "loss": final,
        "min_loss": min(best, final),
        "objective": final + epsilon / 2 * norm,
        "min_objective": min(best_obj, final + epsilon / 2 * norm),
        "sq_norm": norm,
        "grad_norm": float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads))),
        "curve": curve,
    }


def warm_start_sweep(
    data: TikhonovData,
    theta: dict[str, torch.Tensor],
    epsilons: list[float],
    steps: list[int],
    *,
    lr: float = 1e-3,
    tau: float = 1.0,
    record: str | int = "log",
) -> list[dict]:
    """The authors' sweep (their ``tikhonovEpsilon.py``): one model trained through ``epsilons`` in
    turn, ``steps[i]`` steps at ``epsilons[i]``, each stage a fresh :func:`train` (new Adam state,
    new cosine schedule) started from where the previous stage ended. Returns the list of
    :func:`train` results, each with ``epsilon`` and ``steps`` added. ``epsilons`` and ``steps``
    are non-empty lists of the same length."""
    if not isinstance(epsilons, (list, tuple)) or not isinstance(steps, (list, tuple)):
        raise TypeError("epsilons and steps must be lists")
    if not epsilons or len(epsilons) != len(steps):
        raise ValueError(
            f"epsilons and steps must be non-empty and of equal length, got {len(epsilons)} and {len(steps)}"
        )
    out = []
    for eps, n_steps in zip(epsilons, steps):
        result = train(data, theta, eps, n_steps, lr=lr, tau=tau, record=record)
        out.append({"epsilon": eps, "steps": n_steps, **result})
    return out


def uniform_attention_interpolant(
    data: TikhonovData,
    *,
    epsilons: tuple[float, ...] = (1e-1, 1e-2, 1e-3, 1e-4, 1e-5),
    max_iter: int = 500,
) -> dict[str, torch.Tensor]:
    """An exact interpolant of ``data`` with **uniform attention** and a small norm (chapter 15).

    With ``q = k = 0`` every attention score is 0, softmax weights are ``1/n`` at every temperature,
    and with ``rho = 0`` the block is ``T(X_j) = FF(V m_j)`` for every token, ``m_j`` the mean of
    ``X_j``. Interpolation is then the ``N`` vector equations ``FF(V m_j) = y_j``. Two steps:

    1. *search* (only chooses a good point, proves nothing): from ``theta*``, minimise
       ``(1/N) sum_j |FF(V m_j) - y_j|^2 + (eps/2)|theta|^2`` over ``(V, eta, W, U, b)`` by L-BFGS in
       float64, for each ``eps`` of ``epsilons`` in turn (at most ``max_iter`` iterations each);
    2. *exact correction* (a least-squares problem): where every hidden unit is active at every
       ``V m_j`` (checked), ``FF(V m_j) = G V m_j + W b`` with ``G = eta I + W U``, so the equations
       are linear in ``V``; ``V`` is replaced by ``V + G^{-1} R (M^T)^+``, the minimum-norm
       correction that solves them, ``R`` the residuals and ``M [N, d]`` the means.

    Returns a float64 parameter dict (keys :data:`PARAMETER_NAMES`, ``q = k = rho = 0``, no grad)
    whose loss :func:`loss` on ``data`` (in float64) is at rounding level; it upper-bounds the
    squared norm of a minimum-norm interpolant of the block by its :func:`sq_norm`.

    Raises ``TypeError`` for ``data`` that is not a :class:`TikhonovData`, ``ValueError`` for
    ``epsilons`` that are not a non-empty sequence of finite reals ``> 0``, a ``max_iter < 1``,
    targets that are not one point per sequence, and when the correction does not apply: means
    that are not linearly independent (``N > d`` or degenerate data), a singular ``G``, or a hidden
    unit that is inactive at some mean after the correction.
    """
    if not isinstance(data, TikhonovData):
        raise TypeError(
            f"data must be a TikhonovData (from tikhonov_data), got {type(data).__name__}"
        )
    if not isinstance(epsilons, (list, tuple)) or not epsilons:
        raise ValueError(
            f"epsilons must be a non-empty list or tuple of reals > 0, got {epsilons!r}"
        )
    eps_list = [_real("epsilons", e, positive=True) for e in epsilons]
    max_iter = _positive_int("max_iter", max_iter)
    X = _check_X(data.X).detach().double()
    Y = data.Y.detach().double()
    if tuple(Y.shape) != (X.shape[0], 1, X.shape[2]):
        raise ValueError(
            f"data.Y must have shape [N, 1, d] = {(X.shape[0], 1, X.shape[2])}, got {tuple(Y.shape)}"
        )
    N, d = X.shape[0], X.shape[2]
    M, Yp = X.mean(dim=1), Y[:, 0, :]
    if d < N or int(torch.linalg.matrix_rank(M)) < N:
        raise ValueError(
            f"the {N} sequence means must be linearly independent in R^{d} for the correction"
        )
    th = {k: v.detach().double().clone() for k, v in data.theta_star.items()}
    free = ("V", "eta", "W", "U", "b")
    params = [th[k].requires_grad_(True) for k in free]

    def ff(Z):
        return th["eta"] * Z + torch.relu(Z @ th["U"].T + th["b"]) @ th["W"].T

    for eps in eps_list:
        opt = torch.optim.LBFGS(
            params,
            max_iter=max_iter,
            tolerance_grad=1e-13,
            tolerance_change=1e-16,
            history_size=50,
            line_search_fn="strong_wolfe",
        )

        def closure():
            opt.zero_grad()
            objective = ((ff(M @ th["V"].T) - Yp) ** 2).sum(-1).mean() + eps / 2 * sum(
                (p**2).sum() for p in params
            )
            objective.backward()
            return objective

        opt.step(closure)
    th = {k: v.detach() for k, v in th.items()}
    G = th["eta"] * torch.eye(d, dtype=torch.float64) + th["W"] @ th["U"]
    if int(torch.linalg.matrix_rank(G)) < d:
        raise ValueError(
            "G = eta I + W U is singular at the search's end point; the correction does not apply"
        )
    if not bool((M @ th["V"].T @ th["U"].T + th["b"] > 0).all()):
        raise ValueError(
            "a hidden unit is inactive at some mean after the search; the correction does not apply"
        )
    R = Yp.T - G @ th["V"] @ M.T - (th["W"] @ th["b"])[:, None]  # [d, N]
    th["V"] = th["V"] + torch.linalg.solve(G, R) @ torch.linalg.pinv(M.T)
    if not bool((M @ th["V"].T @ th["U"].T + th["b"] > 0).all()):
        raise ValueError("a hidden unit became inactive at some mean after the correction")
    th["q"], th["k"], th["rho"] = (
        torch.zeros_like(th["q"]),
        torch.zeros_like(th["k"]),
        torch.zeros_like(th["rho"]),
    )
    return th


def _solve_exact(A: list[list[Fraction]], B: list[list[Fraction]]) -> list[list[Fraction]]:
    """``A^{-1} B`` for a square invertible ``A`` (lists of Fractions), by Gauss-Jordan elimination;
    ``ValueError`` if ``A`` is singular."""
    n = len(A)
    rows = [list(A[i]) + list(B[i]) for i in range(n)]
    for col in range(n):
        pivot = next((r for r in range(col, n) if rows[r][col] != 0), None)
        if pivot is None:
            raise ValueError("singular matrix in the exact solve")
        rows[col], rows[pivot] = rows[pivot], rows[col]
        inv = 1 / rows[col][col]
        rows[col] = [x * inv for x in rows[col]]
        for r in range(n):
            if r != col and rows[r][col] != 0:
                f = rows[r][col]
                rows[r] = [x - f * y for x, y in zip(rows[r], rows[col])]
    return [row[n:] for row in rows]


def exact_uniform_interpolant(
    data: TikhonovData, theta: dict[str, torch.Tensor]
) -> tuple[dict, Fraction]:
    r"""An **exact** rational interpolant of ``data`` next to the float one of
    :func:`uniform_attention_interpolant`, and its squared norm, exactly.

    The data (floats, hence rationals) are converted exactly to Fractions. Keeping ``eta, W, U, b``
    of ``theta`` (converted exactly), the linear system ``G V M^T = Y^T - W b 1^T`` of
    :func:`uniform_attention_interpolant` (``G = eta I + W U``, ``M`` the exact sequence means) is
    solved in exact arithmetic for its minimum-norm solution ``V = G^{-1} R (M M^T)^{-1} M``. The
    function then checks, exactly, that every hidden unit is active at every ``V m_j`` and that
    ``FF(V m_j) = y_j`` for every ``j``. With ``q = k = rho = 0`` the softmax weights are exactly
    ``1/n`` at every temperature, so every token of ``T(X_j)`` is ``FF(V m_j) = y_j``: the returned
    point interpolates exactly, and its squared norm bounds that of a minimum-norm interpolant.

    Returns ``(params, sq_norm)``: a dict with the keys :data:`PARAMETER_NAMES` of Fraction numpy
    arrays (object dtype; ``rho``, ``eta`` as Fractions) and the exact ``|theta|^2`` as a Fraction.

    Raises ``TypeError`` for ``data`` that is not a :class:`TikhonovData` or a ``theta`` that is not
    a parameter dict of :func:`block`'s shapes, and ``ValueError`` when ``q``, ``k`` or ``rho`` is
    nonzero, the means are linearly dependent, ``G`` is singular, or a hidden unit is inactive at
    some mean (then the exact system does not describe the block).
    """
    import numpy as np

    if not isinstance(data, TikhonovData):
        raise TypeError(
            f"data must be a TikhonovData (from tikhonov_data), got {type(data).__name__}"
        )
    X = _check_X(data.X).detach().double()
    th = {k: v.detach().double() for k, v in theta.items()} if isinstance(theta, dict) else theta
    _check_theta(th, X)
    if any(float(th[name].abs().max()) != 0 for name in ("q", "k", "rho")):
        raise ValueError(
            "theta must have q = k = rho = 0 (uniform attention, as uniform_attention_interpolant returns)"
        )
    N, n, d = X.shape
    w = th["W"].shape[1]
    fr = Fraction
    Xf = [[[fr(v) for v in row] for row in seq] for seq in X.tolist()]
    M = [[sum(seq[i][c] for i in range(n)) / n for c in range(d)] for seq in Xf]
    Y = [[fr(v) for v in row] for row in data.Y.detach().double()[:, 0, :].tolist()]
    W = [[fr(v) for v in row] for row in th["W"].tolist()]
    U = [[fr(v) for v in row] for row in th["U"].tolist()]
    b = [fr(v) for v in th["b"].tolist()]
    eta = fr(float(th["eta"]))
    G = [
        [(eta if r == c else 0) + sum(W[r][k] * U[k][c] for k in range(w)) for c in range(d)]
        for r in range(d)
    ]
    Wb = [sum(W[r][k] * b[k] for k in range(w)) for r in range(d)]
    R = [[Y[j][r] - Wb[r] for j in range(N)] for r in range(d)]  # [d, N]
    MMt = [[sum(M[a][c] * M[e][c] for c in range(d)) for e in range(N)] for a in range(N)]
    try:
        S = _solve_exact(G, R)  # G^{-1} R, [d, N]
        Z = _solve_exact(MMt, M)  # (M M^T)^{-1} M, [N, d]
    except ValueError:
        raise ValueError(
            "G is singular or the sequence means are linearly dependent: no exact solve"
        ) from None
    V = [[sum(S[r][j] * Z[j][c] for j in range(N)) for c in range(d)] for r in range(d)]
    for j in range(N):
        z = [sum(V[r][c] * M[j][c] for c in range(d)) for r in range(d)]
        pre = [sum(U[k][c] * z[c] for c in range(d)) + b[k] for k in range(w)]
        if min(pre) <= 0:
            raise ValueError(
                f"a hidden unit is inactive at the mean of sequence {j}: the exact system does not apply"
            )
        out = [eta * z[r] + sum(W[r][k] * pre[k] for k in range(w)) for r in range(d)]
        if out != Y[j]:  # pragma: no cover - guaranteed by the solve
            raise AssertionError(f"exact solve failed for sequence {j}")
    zero = [fr(0)] * d
    params = {
        "q": np.array(zero, dtype=object),
        "k": np.array(zero, dtype=object),
        "rho": fr(0),
        "V": np.array(V, dtype=object),
        "eta": eta,
        "W": np.array(W, dtype=object),
        "U": np.array(U, dtype=object),
        "b": np.array(b, dtype=object),
    }
    sq = (
        eta**2
        + sum(x * x for row in V for x in row)
        + sum(x * x for row in W for x in row)
        + sum(x * x for row in U for x in row)
        + sum(x * x for x in b)
    )
    return params, sq
