"""Classification, decisions, the gate machine and policies. May import ledger and kernel."""
