"""The selectors by name: what a taxonomy mechanic's ``selector`` may say.

Its own module so that loading a taxonomy can check the names without importing the
selection step (``factory.graph.select``), which in turn uses the taxonomy.
"""

from __future__ import annotations

from typing import Callable

from factory.graph.selectors.chain import select_calculation, select_chain, select_temporal
from factory.graph.selectors.comparison import select_comparison
from factory.graph.selectors.intersection import select_intersection
from factory.records import Subgraph

Selector = Callable[..., Subgraph]

SELECTORS: dict[str, Selector] = {
    "chain": select_chain,
    "intersection": select_intersection,
    "temporal": select_temporal,
    "comparison": select_comparison,
    "calculation": select_calculation,
}
