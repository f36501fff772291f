"""The measured speed-up: the benchmark harness, its runs and records, settings, machine probes, roofline, batch sweep, the flat engine."""
