"""Rank collapse: the token spread of Dong et al. (2021)."""

import math

import pytest
import torch

from helpers.measure.rank_collapse import token_spread


def test_known_answers():
    same = torch.ones(2, 5, 3)  # every position holds the same vector: collapsed
    assert token_spread(same) == 0.0
    opposite = torch.tensor([[1.0, 0.0], [-1.0, 0.0]])  # mean 0: all of X is spread
    assert token_spread(opposite) == pytest.approx(1.0)
    orthogonal = torch.eye(2)  # mean (1/2, 1/2): ||X - mean|| = 1, ||X|| = sqrt(2)
    assert token_spread(orthogonal) == pytest.approx(1 / math.sqrt(2))
    # a batch is the mean over its sequences
    assert token_spread(torch.stack([opposite, torch.ones(2, 2)])) == pytest.approx(0.5)
    # random tokens: about sqrt(1 - 1/length)
    g = torch.Generator().manual_seed(0)
    assert token_spread(torch.randn(64, 8, 256, generator=g)) == pytest.approx(math.sqrt(7 / 8), abs=0.01)


def test_bad_input_is_refused():
    with pytest.raises(TypeError, match="h"):
        token_spread([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="length >= 2"):
        token_spread(torch.ones(3, 1, 4))
    with pytest.raises(ValueError, match="all zero"):
        token_spread(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="NaN"):
        token_spread(torch.tensor([[1.0, float("nan")], [0.0, 1.0]]))
