"""Text analysis shared by L0 and L1: one tokenizer, so both layers agree on what a "term" is."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import Stemmer

WORD = re.compile(r"[^\W_]+", re.UNICODE)
STEMMER = Stemmer.Stemmer("english")
# Lucene's English stop words plus question and pronoun words. Not scikit-learn's list: it drops
# domain words such as "bill", "system", "call" and "fire".
STOP_WORDS: frozenset[str] = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with how what why when where which who whom do does did i me my we us "
    "our you your can could should would from has have had its am been being".split()
)


def normalize_label(value: object) -> str:
    """Case- and space-insensitive form of a domain/category/keyword label ("  Alerting " -> "alerting")."""
    text = unicodedata.normalize("NFKC", str(value)) if value is not None else ""
    return " ".join(text.split()).casefold()


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return STEMMER.stemWord(word)


def tokenize(text: str) -> list[str]:
    """Lower-cased, stop-word-free, Snowball-stemmed terms of `text`, in order (repeats kept)."""
    words = WORD.findall(unicodedata.normalize("NFKC", text).casefold())
    return [_stem(w) for w in words if w not in STOP_WORDS]


def analyze(text: str) -> list[str]:
    """L1's terms: `tokenize`'s unigrams plus each adjacent pair ("front_matter"), so phrases outscore
    scattered words (how much a pair counts is L1's choice: see retrieval/l1/search.py)."""
    terms = tokenize(text)
    return terms + [f"{a}_{b}" for a, b in zip(terms, terms[1:], strict=False)]


def shares_term(query_terms: set[str], text: str) -> bool:
    """True when `text` contains at least one of the query's terms (after analysis)."""
    return not query_terms.isdisjoint(tokenize(text))
