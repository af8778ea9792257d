"""analysis/metrics."""
