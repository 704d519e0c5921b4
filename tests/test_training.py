import pytest
import torch

from helpers import data, seed_everything
from helpers.models import DeepMLP
from helpers.training import fit


def _train(seed):
    seed_everything(seed)
    split = data.digits()
    model = DeepMLP(8, 16)
    history = fit(model, split.x_train, split.y_train, epochs=3, lr=0.05, seed=seed, progress=False)
    return model, history


def test_fit_learns_and_records_history():
    _, history = _train(0)
    assert len(history) == 3
    assert history.train_loss[-1] < history.train_loss[0]
    assert history.train_error[-1] < 0.5
    assert all(0 <= e <= 1 for e in history.train_error)


def test_fit_is_repeatable_with_one_seed():
    model_a, hist_a = _train(1)
    model_b, hist_b = _train(1)
    assert hist_a.train_loss == hist_b.train_loss
    for pa, pb in zip(model_a.parameters(), model_b.parameters()):
        assert torch.equal(pa, pb)


def test_fit_draws_no_progress_bar_in_a_static_build(capsys, monkeypatch):
    monkeypatch.setenv("COURSE_STATIC_BUILD", "1")
    split = data.digits()
    fit(DeepMLP(4, 8), split.x_train[:64], split.y_train[:64], epochs=2, lr=0.01)
    captured = capsys.readouterr()
    assert "it/s" not in captured.err + captured.out


@pytest.mark.parametrize(
    "kwargs, err, word",
    [
        (dict(epochs=0), ValueError, "epochs"),
        (dict(lr=0.0), ValueError, "lr"),
        (dict(batch_size=1.5), TypeError, "batch_size"),
        (dict(optimizer="lbfgs"), ValueError, "optimizer"),
    ],
)
def test_fit_rejects_bad_arguments(kwargs, err, word):
    args = dict(epochs=1, lr=0.1) | kwargs
    with pytest.raises(err, match=word):
        fit(DeepMLP(4, 8), torch.randn(4, 64), torch.zeros(4, dtype=torch.long), **args)


def test_fit_rejects_mismatched_data():
    with pytest.raises(ValueError, match="same length"):
        fit(DeepMLP(4, 8), torch.randn(4, 64), torch.zeros(3, dtype=torch.long), epochs=1, lr=0.1)
