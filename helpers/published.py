"""Published numbers the course quotes as data, each with its source (not measured here).

:data:`IMAGENET_TOP5` lists ImageNet (ILSVRC) classification results: the four entries
that the chapter-1 source article charts, the two non-residual entries of 2015 that He et
al. (2016) list beside their own, and He et al.'s best single model. Each entry says
where its number is printed (paper and table), on which split it was measured
(``"test"``: the competition's test server; ``"validation"``: the 50,000 validation
images) and whether it comes from an ensemble of several nets or from one net. Numbers
from different splits, or from an ensemble and a single net, are not like for like:
:func:`series` picks one kind.
"""

from __future__ import annotations

from dataclasses import dataclass

SPLITS = ("test", "validation")


@dataclass(frozen=True)
class Entry:
    """One published ImageNet result: top-5 error in percent, with where it comes from.

    ``layers`` is the depth in weight layers (of the deepest member, for an ensemble), or
    None where the course has not checked it. ``cite`` is the bibliography key of the
    paper the number is taken from and ``table`` names that paper's table which prints
    it; ``note`` says what the entry is.
    """

    year: int
    name: str
    layers: int | None
    top5_error: float
    split: str
    ensemble: bool
    cite: str
    table: str
    note: str
    residual: bool = False

    def __post_init__(self):
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {self.split!r}")

    @property
    def kind(self) -> str:
        """``"ensemble, test"`` or ``"single model, validation"`` (and so on)."""
        return f"{'ensemble' if self.ensemble else 'single model'}, {self.split}"


_RESNET_TABLE5 = "He et al. 2016, Table 5 (ensembles, test set)"

IMAGENET_TOP5 = (
    Entry(2012, "AlexNet", 8, 16.4, "test", True, "krizhevsky2012imagenet", "Krizhevsky et al. 2012, Table 2",
          "average of 5 nets"),
    Entry(2014, "VGG", 19, 7.32, "test", True, "he2016deep", _RESNET_TABLE5,
          "ILSVRC-2014 submission, an ensemble of 7 nets; the source article rounds it to 7.3 %"),
    Entry(2014, "GoogLeNet", 22, 6.66, "test", True, "he2016deep", _RESNET_TABLE5,
          "ILSVRC-2014 winner, 7 nets and 144 crops per image; the source article rounds it to 6.7 %"),
    Entry(2015, "PReLU-net", None, 4.94, "test", True, "he2016deep", _RESNET_TABLE5,
          "ensemble of non-residual nets with PReLU activations and He initialisation; He et al., February 2015"),
    Entry(2015, "BN-Inception", None, 4.82, "test", True, "he2016deep", _RESNET_TABLE5,
          "ensemble of non-residual Inception nets with batch normalisation; Ioffe and Szegedy, 2015"),
    Entry(2015, "ResNet-152", 152, 4.49, "validation", False, "he2016deep",
          "He et al. 2016, Table 4 (single models, validation set, 10-crop testing)",
          "one residual net of 152 layers", residual=True),
    Entry(2015, "ResNet", 152, 3.57, "test", True, "he2016deep", _RESNET_TABLE5,
          "ILSVRC-2015 winner, an ensemble of 6 residual nets of different depths, two of them 152 layers deep",
          residual=True),
)
"""ImageNet top-5 errors, in order of year and then of error (most recent last)."""


def series(entries=IMAGENET_TOP5, *, split: str = "test", ensemble: bool = True) -> tuple[Entry, ...]:
    """The entries of one kind only (default: ensembles on the test set), so that they compare."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return tuple(e for e in entries if e.split == split and e.ensemble == ensemble)
