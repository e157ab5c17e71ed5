"""Offline LLM evaluation harness: real models from packaged weights, Wikipedia text, perplexity and embedding similarity."""
