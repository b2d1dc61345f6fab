"""Golden state samples: committed bytes of every persisted format (see samples.py)."""
