"""GLEE (Shapira et al.): two-player language games with free-text messages over a parameter grid.

- ``common.py``: what the three families share (names, alternating offers, message fields, money bounds).
- ``bargaining.py``: Rubinstein alternating offers with discounting; ``negotiation.py``: a seller and a
  buyer alternate price offers; ``persuasion.py``: a seller who knows the quality talks to a buyer.
Prompts: ``hosts/templates/{bargaining,negotiation,persuasion}.toml``; analysis (metrics, linear models):
``analysis/families/glee.py``.
"""

from .bargaining import Bargaining
from .negotiation import Negotiation
from .persuasion import Persuasion

GAMES = (Bargaining(), Negotiation(), Persuasion())
