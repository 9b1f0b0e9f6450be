"""Benchmarks: ``python -m bench`` (or ``make bench``). Numbers go to docs/performance.md."""
