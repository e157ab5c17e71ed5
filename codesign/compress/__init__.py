"""LLM weight compression: quantizers, low-rank reconstruction, kernel dispatch."""
