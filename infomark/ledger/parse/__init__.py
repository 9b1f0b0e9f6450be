"""Parsing: assistant text -> candidate blocks -> tokens -> LALR parse -> block models, with
diagnostics. Empty on purpose: importing a submodule costs nothing more (hook path)."""
