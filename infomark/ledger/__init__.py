"""The ledger: grammar and parser, evidence registry, journal, store and ledger semantics.

May import :mod:`infomark.kernel`. Heavy dependencies (lark, pydantic, sqlite-utils)
load lazily, only in the modules that need them.
"""
