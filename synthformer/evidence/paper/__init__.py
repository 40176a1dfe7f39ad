"""The paper's published numbers, as data."""
