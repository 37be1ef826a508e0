"""Benchmarks (issue #6): `make bench`, or `python -m bench.run --quick`. See BENCHMARKS.md."""
