"""Stamps: binding a claim to evidence (oracle, inference, source) and refusing a stamp.
Empty on purpose: importing a submodule costs nothing more (hook path)."""
