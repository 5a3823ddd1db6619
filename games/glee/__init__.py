"""GLEE (Shapira et al.): two-player language games with free-text messages over a parameter grid.

- ``common.py``: what the three families share (names, alternating offers, message fields, money bounds).
- ``bargaining.py``: Rubinstein alternating offers with discounting; ``negotiation.py``: a seller and a
  buyer alternate price offers; ``persuasion.py``: a seller who knows the quality talks to a buyer.
- ``reference.py``: reading GLEE's released games (config.json + game.csv) for each game's
  ``from_reference``: GLEE's reading of its rows is the outcome of record, our replay the check.
Prompts: ``hosts/templates/{bargaining,negotiation,persuasion}.toml``; importer: ``importers/glee.py``;
analysis (metrics, linear models, people beside models): ``analysis/families/glee.py``.
"""

from .bargaining import Bargaining
from .negotiation import Negotiation
from .persuasion import Persuasion

GAMES = (Bargaining(), Negotiation(), Persuasion())
