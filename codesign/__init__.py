"""codesign: hardware/algorithm co-design for machine learning."""

__version__ = "0.1.0"
__all__ = ["__version__"]
