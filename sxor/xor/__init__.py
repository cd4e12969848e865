"""Part I: sparse XOR with two-head softmax attention (Han & Ghoshdastidar, arXiv 2502.07553v2).

Pure tensor functions, batched over leading dimensions, float64 by default, on any device:

* :mod:`~sxor.xor.data`: the task and the frozen positional embeddings;
* :mod:`~sxor.xor.model`: scores, attention maps and the two-head prediction;
* :mod:`~sxor.xor.schematic`: the picture of the two-head model, drawn from its own numbers;
* :mod:`~sxor.xor.population`: population loss, its gradient and the one-step map in closed form;
* :mod:`~sxor.xor.reference`: slow references (enumeration, Monte Carlo, autograd) for checking;
* :mod:`~sxor.xor.sphere`: inner products of random unit vectors;
* :mod:`~sxor.xor.metrics`: the success criterion and the failure modes;
* :mod:`~sxor.xor.analysis`: leading-order predictions of the one-step chapters;
* :mod:`~sxor.xor.dynamics`: many steps, empirical gradients, SGD;
* :mod:`~sxor.xor.kparity`: the k-sparse parity model with k heads (chapter 9);
* :mod:`~sxor.xor.sweeps`: seeded random instances, chunked sweeps;
* :mod:`~sxor.xor.ffnn`, :mod:`~sxor.xor.cls_transformer`: the baselines and the CLS-token model;
* :mod:`~sxor.xor.checks`: argument checks shared by all of the above.

Part I may import the book's machinery (:mod:`sxor.book`, :mod:`sxor.progress`); nothing outside
Part I and the experiments imports Part I.
"""
