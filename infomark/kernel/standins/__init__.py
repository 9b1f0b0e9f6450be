"""Checked stand-ins for the standard-library modules the hook path may not import.

See README.md beside this file: each module here is fully type-checked; the public
names live in :mod:`infomark.kernel.records`, :mod:`infomark.kernel.contexts`,
:mod:`infomark.kernel.enums` and :mod:`infomark.kernel.lazyre`, which show type checkers the
standard module instead.
"""
