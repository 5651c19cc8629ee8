"""Ways in: the command line, the Python API, the pytest plugin and its assertions."""
