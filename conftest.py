"""pytest's root configuration: loaded before any test module imports torch.

It pins PyTorch's CPU kernels (``tools/cpu_kernels.py`` says why), for the tests and for the
notebook kernels that nbval starts, which inherit this process's environment.
"""

from tools.cpu_kernels import pin

pin()
