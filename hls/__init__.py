"""Header-only HLS C++ library that emitted projects include (shipped as package data)."""
