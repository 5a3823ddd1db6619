"""EconArena: an evaluation harness for strategic reasoning of language models in economic games."""

__version__ = "0.2.0"
SCHEMA_VERSION = 1
