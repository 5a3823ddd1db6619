"""GAMA-Bench (Huang et al.): eight ten-player games of 20 rounds with a 0-100 score each.

- games 1-6 subclass the contract's ``games/repeated.py`` (K simultaneous rounds, a report after each).
- ``reference.py``: reads GAMA-Bench's released result files into a round log (the games' ``from_reference``).
- one module per game: ``guessing.py`` (1), ``el_farol.py`` (2), ``divide_dollar.py`` (3),
  ``public_goods.py`` (4), ``diners_dilemma.py`` (5), ``sealed_bid.py`` (6), ``battle_royale.py`` (7),
  ``pirate.py`` (8).
Prompts: ``hosts/templates/<game>.toml``; analysis: ``analysis/families/gamabench.py``; importer:
``importers/gamabench.py``.
"""

from .battle_royale import BattleRoyale
from .diners_dilemma import DinersDilemma
from .divide_dollar import DivideDollar
from .el_farol import ElFarolBar
from .guessing import GuessingGame
from .pirate import PirateGame
from .public_goods import PublicGoods
from .sealed_bid import SealedBidAuction

GAMES = (GuessingGame(), ElFarolBar(), DivideDollar(), PublicGoods(), DinersDilemma(), SealedBidAuction(),
         BattleRoyale(), PirateGame())
