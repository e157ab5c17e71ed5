"""Example learner configs (TOML and YAML), shipped with the package (docs/config.md), and hls4ml_head.py, the
online head behind an hls4ml network end to end (docs/integration.md)."""
