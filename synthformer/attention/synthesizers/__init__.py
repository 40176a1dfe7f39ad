"""The synthesizing functions, one file per variant, and their registry."""
