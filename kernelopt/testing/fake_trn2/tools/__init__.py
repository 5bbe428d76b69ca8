"""The fake executables' entry points (run as `python -m ...` by the wrappers)."""
