"""engines/spark."""
