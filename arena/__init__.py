"""Thousand Arena: a tournament platform and bot arena for the card game 1000."""

__version__ = "0.1.0"
