"""Games of a user's own, written from docs/own-games.md, that the contract tests hold to `econarena check`."""
