"""What touches the outside: executor wrapper, hooks, MCP proxy, HTTP service, built-in tools."""
