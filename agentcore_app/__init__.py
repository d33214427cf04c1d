"""agentcore_app."""
