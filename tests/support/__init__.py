"""Reusable test helpers: a scripted OpenAI-compatible server and sample tool metadata."""
