"""The formats and small rules that two or more layers share (the run directory, tallies, locks, trusted
imports): this folder imports nothing of the package outside it, so every layer above games may read it."""
