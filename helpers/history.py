"""Published numbers the course quotes as data, each with its source (not measured here).

:data:`IMAGENET_TOP5` lists the ImageNet (ILSVRC) classification results that the
chapter-1 source article charts: the top-5 error on the competition's *test* set of a
famous entry each year. Every one of them is the result of an ensemble of several nets,
not of a single model; the ``note`` says which.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    """One ILSVRC result: top-5 test error in percent, depth in weight layers, citation key."""

    year: int
    name: str
    layers: int
    top5_error: float
    cite: str
    note: str
    residual: bool = False


IMAGENET_TOP5 = (
    Entry(2012, "AlexNet", 8, 16.4, "krizhevsky2012imagenet", "average of 5 nets"),
    Entry(2014, "VGG", 19, 7.3, "simonyan2015very", "ensemble of 7 nets (ILSVRC-2014 submission)"),
    Entry(2014, "GoogLeNet", 22, 6.7, "szegedy2015going", "ensemble of 7 nets, 144 crops each (6.67 %)"),
    Entry(2015, "ResNet", 152, 3.57, "he2016deep", "ensemble of 6 nets of different depths", residual=True),
)
"""The source article's table, year by year (its ResNet row is an ensemble, not ResNet-152 alone)."""
