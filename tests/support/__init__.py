"""Test support shared by the suites: an OpenAI-compatible LLM server and synthetic exported segments."""
