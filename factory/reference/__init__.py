"""The strong-writer reference set (see records.py): records, the draw, judging, adversarial sets."""
