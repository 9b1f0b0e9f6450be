"""The command-line interface (click + rich), loaded only off the hook path."""
