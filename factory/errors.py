"""The one error type the command line turns into a one-line message and exit code 1."""


class FactoryError(Exception):
    """A user-facing failure: bad input, missing file, mismatched index, ..."""
