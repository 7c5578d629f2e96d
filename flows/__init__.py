"""Prefect flows: thin wiring of factory/ functions (the library runs without Prefect)."""
