"""Fake ``nki.framework``."""
