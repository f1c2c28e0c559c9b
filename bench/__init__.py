"""Benchmarks and long-running checks of kafkacompat (not part of the installed package).

``python -m bench`` runs the benchmark sections (see ``bench/__main__.py``);
``python -m bench.fuzz_decoders`` feeds garbage to every generated decoder.
"""
