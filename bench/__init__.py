"""Benchmarks: each bench_*.py module has a main() that prints its figures."""
