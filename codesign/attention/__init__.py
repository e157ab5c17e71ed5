"""Attention-side compression: sampled value aggregation and low-rank KV cache decode."""
