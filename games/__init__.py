"""Games: pure rules. Importing this package must never import an LLM SDK or torch."""

from econarena.games.auctions import EnglishAuction, SecondPriceAuction
from econarena.games.base import Game
from econarena.games.battle_royale import BattleRoyale
from econarena.games.contests import BeautyContest
from econarena.games.diners_dilemma import DinersDilemma
from econarena.games.divide_dollar import DivideDollar
from econarena.games.el_farol import ElFarolBar
from econarena.games.guessing import GuessingGame
from econarena.games.pirate import PirateGame
from econarena.games.public_goods import PublicGoods
from econarena.games.sealed_bid import SealedBidAuction

GAMES: dict[str, Game] = {g.name: g for g in (
    BeautyContest(), SecondPriceAuction(), EnglishAuction(),
    GuessingGame(), ElFarolBar(), DivideDollar(), PublicGoods(), DinersDilemma(),
    SealedBidAuction(), BattleRoyale(), PirateGame(),
)}


def get_game(name: str) -> Game:
    try:
        return GAMES[name]
    except KeyError:
        raise KeyError(f"unknown game {name!r}; known: {', '.join(sorted(GAMES))}") from None


__all__ = ["GAMES", "Game", "get_game"]
