"""The benchmark card (card.md, card.html, plots/*.png) of an exported benchmark folder."""

from factory.card.render import CardData, write_card

__all__ = ["CardData", "write_card"]
