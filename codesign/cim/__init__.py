"""CIM backend: simulated noisy compute-in-memory crossbars, converters, energy."""
