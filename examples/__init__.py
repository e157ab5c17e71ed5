"""Example learner configs (TOML and YAML), shipped with the package; see docs/config.md."""
