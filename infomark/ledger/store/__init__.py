"""Stores: the journal and blobs on SQLite or PostgreSQL, and choosing one for a home.
Empty on purpose: importing a submodule costs nothing more (hook path)."""
