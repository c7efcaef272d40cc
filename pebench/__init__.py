"""pebench: a reproducible benchmark of positional encodings in transformers."""

__version__ = "0.1.0"
