"""Set-up shared by every chapter: seeds, print precision, figure style, device and scale."""

from __future__ import annotations

import random

import numpy as np
import torch

from .data import default_device

#: How much larger the sizes of a chapter get on a GPU (one variable for the whole chapter).
GPU_SCALE = 8


def setup(seed: int = 0) -> tuple[torch.device, int]:
    """Fix seeds and printing, style figures, and return ``(DEVICE, SCALE)``.

    ``DEVICE`` is :func:`sxor.data.default_device`; ``SCALE`` is 1 on a CPU and :data:`GPU_SCALE` on
    a GPU, so ``n = 1000 * SCALE`` grows a chapter's sizes with one variable.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_printoptions(precision=4, sci_mode=False)
    np.set_printoptions(precision=4, suppress=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "figure.figsize": (7.0, 4.2),
            "figure.dpi": 100,
            "font.size": 11,
            "axes.titlesize": 12,
            "axes.labelsize": 11,
            "legend.fontsize": 10,
            "axes.grid": True,
            "grid.alpha": 0.3,
        }
    )
    try:  # inline backend options exist only inside IPython
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            shell.run_line_magic("config", "InlineBackend.figure_formats = ['png']")
    except ImportError:
        pass
    device = default_device()
    return device, (1 if device.type == "cpu" else GPU_SCALE)
