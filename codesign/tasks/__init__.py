"""Online-learning task streams."""
