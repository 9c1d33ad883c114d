"""driver."""
