"""Games: pure rules. Importing this package must never import an LLM SDK or torch."""

from .auctions import EnglishAuction, SecondPriceAuction
from .bargaining import Bargaining
from .base import Game
from .battle_royale import BattleRoyale
from .contests import BeautyContest
from .diners_dilemma import DinersDilemma
from .divide_dollar import DivideDollar
from .el_farol import ElFarolBar
from .fruit_trade import FruitTrade
from .guessing import GuessingGame
from .na_buysell import BuySell
from .na_exchange import ResourceExchange
from .na_ultimatum import MultiTurnUltimatum
from .negotiation import Negotiation
from .persuasion import Persuasion
from .pirate import PirateGame
from .public_goods import PublicGoods
from .sealed_bid import SealedBidAuction

GAMES: dict[str, Game] = {g.name: g for g in (
    BeautyContest(), SecondPriceAuction(), EnglishAuction(),
    GuessingGame(), ElFarolBar(), DivideDollar(), PublicGoods(), DinersDilemma(),
    SealedBidAuction(), BattleRoyale(), PirateGame(),
    ResourceExchange(), MultiTurnUltimatum(), BuySell(),
    Bargaining(), Negotiation(), Persuasion(),
    FruitTrade(),
)}


def get_game(name: str) -> Game:
    try:
        return GAMES[name]
    except KeyError:
        raise KeyError(f"unknown game {name!r}; known: {', '.join(sorted(GAMES))}") from None


__all__ = ["GAMES", "Game", "get_game"]
