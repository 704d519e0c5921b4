import numpy as np
import pytest
import torch

from helpers import data


def test_digits_split_is_standardised_and_stratified():
    split = data.digits()
    assert split.x_train.shape[1] == split.n_features == 64
    assert split.n_classes == 10
    assert len(split.x_train) + len(split.x_test) == 1797
    assert split.x_train.dtype == torch.float32
    assert torch.allclose(split.x_train.mean(0), torch.zeros(64), atol=1e-5)
    std = split.x_train.std(0, unbiased=False)
    assert torch.all((std - 1).abs() < 1e-4) or torch.all((std < 1e-6) | ((std - 1).abs() < 1e-4))
    assert set(split.y_test.tolist()) == set(range(10))


def test_digits_split_does_not_depend_on_the_global_seed():
    torch.manual_seed(1)
    a = data.digits()
    torch.manual_seed(2)
    b = data.digits()
    assert torch.equal(a.x_train, b.x_train)


def test_bundled_digits_are_scikit_learns_default_split():
    """The copy digits() reads is the split scikit-learn makes: same images, same order."""
    raw = data.raw_digits_split(**data.DEFAULT_SPLIT)
    with np.load(data.BUNDLED_DIGITS) as bundle:
        assert sorted(bundle.files) == sorted(raw)
        for key, values in raw.items():
            assert bundle[key].dtype == np.uint8 and np.array_equal(bundle[key], values), key


def test_other_splits_come_from_scikit_learn():
    default, other = data.digits(), data.digits(split_seed=1)
    assert len(other.x_train) == len(default.x_train)
    assert not torch.equal(other.x_train, default.x_train)
    assert data.digits(test_size=0.5).x_test.shape == (899, 64)


@pytest.mark.parametrize("bad, err", [(0.0, ValueError), (1.0, ValueError), ("0.2", TypeError)])
def test_digits_rejects_bad_test_size(bad, err):
    with pytest.raises(err, match="test_size"):
        data.digits(test_size=bad)


def test_identity_task():
    x, y = data.identity_task(10, 3, seed=1)
    assert torch.equal(x, y) and x.shape == (10, 3)


def test_sequence_tasks():
    tokens, target = data.sequence_task("reverse", 4, 6, 10)
    assert torch.equal(target, tokens.flip(1))
    tokens, target = data.sequence_task("sort", 4, 6, 10)
    assert torch.all(target[:, 1:] >= target[:, :-1])
    with pytest.raises(ValueError, match="kind"):
        data.sequence_task("shuffle", 4, 6, 10)
