"""KAN and MLP models: float (torch) and bit-exact fixed-point online learners."""
