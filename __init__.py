"""EconArena: an evaluation harness for strategic reasoning of language models in economic games."""

__version__ = "0.1.0"
SCHEMA_VERSION = 1
