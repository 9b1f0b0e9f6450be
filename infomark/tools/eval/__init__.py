"""``infomark eval`` and ``infomark replay``: the paired eval harness, the promotion gate, and
replay of recorded sessions under today's rules (docs/eval.md).

Modules, one job each: ``suite`` (task suites), ``grade`` (the hidden check, outside the agent's
tree), ``agents`` (scripted stochastic agents), ``observer`` (what the harness measures),
``harness`` (the runs), ``stats`` (paired bootstrap, promotion), ``report`` / ``html`` (output),
``promotion`` (journaled decisions, approved activation), ``policy`` (policies under test),
``noise`` (a harmful policy), ``replay`` / ``sources`` / ``junit`` (replay).
"""
