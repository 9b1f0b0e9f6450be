"""The package version, in one place (imports nothing)."""

__version__ = "0.1.0"
