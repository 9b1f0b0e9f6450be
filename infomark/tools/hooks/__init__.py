"""Host hook integrations (Claude Code). Standard library only on the hot path."""
