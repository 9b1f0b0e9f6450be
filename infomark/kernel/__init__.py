"""The process law as data: InfoMark ranks, reason codes, errors, the gate graph.

This subpackage imports nothing else of ours and only the standard library, so
it is safe on every start-up-sensitive path.
"""
