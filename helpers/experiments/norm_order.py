"""Claim 1.7 (a teaser for chapters 3 to 5): where the LayerNorm sits changes the gradients.

Post-LN: ``x = LN(x + F(x))``; Pre-LN: ``x = x + F(LN(x))``. For a stack of
:class:`helpers.models.transformer.EncoderLayer` s at initialisation, one backward pass of
the cross-entropy on a synthetic sequence task (reverse the sequence) records the
gradient norm of each layer's last feed-forward weight, ``||dL/dW2_l||`` (the quantity of
Xiong et al. 2020, Fig. 3 and Theorem 1), averaged over a few initialisations.
"""

from __future__ import annotations

import numpy as np
from torch import nn

from .._checks import positive_int
from ..data import sequence_task
from ..measure.gradients import GradientProfile, gradient_profile
from ..models.transformer import SequenceTransformer
from ..seeding import seed_everything


def _token_loss(logits, targets):
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def norm_order_profiles(n_layers: int = 24, *, d_model: int = 64, n_heads: int = 4, d_ff: int = 128,
                        vocab: int = 16, length: int = 16, batch: int = 64, seed: int = 0,
                        n_inits: int = 3) -> dict[str, GradientProfile]:
    """``{"Post-LN": profile, "Pre-LN": profile}`` at init, one entry per layer (input to output).

    Each profile is the mean over ``n_inits`` initialisations (seeds ``seed``,
    ``seed + 1``, ...), so that one unlucky draw does not decide the picture.
    """
    n_layers = positive_int("n_layers", n_layers)
    n_inits = positive_int("n_inits", n_inits)
    tokens, targets = sequence_task("reverse", batch, length, vocab, seed=seed)
    out = {}
    for position, label in (("post", "Post-LN"), ("pre", "Pre-LN")):
        runs = []
        for init_seed in range(seed, seed + n_inits):
            seed_everything(init_seed)
            model = SequenceTransformer(vocab, length, d_model, n_heads, d_ff, n_layers,
                                        norm_position=position)
            layers = [(f"layer {i + 1}", layer.linear2) for i, layer in enumerate(model.layers)]
            runs.append(gradient_profile(model, _token_loss, tokens, targets, layers=layers))
        out[label] = GradientProfile(runs[0].names, np.mean([r.weight for r in runs], axis=0),
                                     np.mean([r.output for r in runs], axis=0),
                                     float(np.mean([r.loss for r in runs])))
    return out
