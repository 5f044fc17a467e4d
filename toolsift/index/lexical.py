"""BM25 over tool texts (bm25s), with a tokenizer that understands identifiers and CJK text."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence

import bm25s
import numpy as np
import Stemmer
from bm25s.stopwords import STOPWORDS_EN_PLUS

from toolsift.index.exact import top_k
from toolsift.text import split_camel
from toolsift.types import IdArray

_ALNUM_RUN = re.compile(r"[^\W_]+", re.UNICODE)  # letters and digits; '_' and punctuation split
# Hangul, CJK ideographs, kana: scripts where whitespace does not separate words well.
CJK_RUN = re.compile(r"[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]+")

Tokenizer = Callable[[str], list[str]]


def word_tokens(text: str) -> list[str]:
    """camelCase split, lower-cased, split on every non-letter/digit: ``getUserID_v2`` ->
    ``get user id v2``. No stemming, no stop words."""
    tokens: list[str] = []
    for run in _ALNUM_RUN.findall(text):
        tokens.extend(part.lower() for part in split_camel(run))
    return tokens


def cjk_bigrams(text: str) -> list[str]:
    """Character bigrams of each Hangul/CJK run (a one-character run gives none)."""
    grams: list[str] = []
    for run in CJK_RUN.findall(text):
        grams.extend(run[i : i + 2] for i in range(len(run) - 1))
    return grams


def word_and_cjk_tokens(text: str) -> list[str]:
    return word_tokens(text) + cjk_bigrams(text)


STOP_WORDS = frozenset(STOPWORDS_EN_PLUS)
"""English function words (NLTK's list, as bm25s ships it): "I", "the", "to", "would"..."""
_per_thread = threading.local()


def _english_stemmer() -> Stemmer.Stemmer:
    """This thread's Snowball stemmer: a PyStemmer instance keeps per-call state (and a cache) and
    must not be shared between threads, and the service routes from a thread pool."""
    stemmer: Stemmer.Stemmer | None = getattr(_per_thread, "stemmer", None)
    if stemmer is None:
        stemmer = _per_thread.stemmer = Stemmer.Stemmer("english")
    return stemmer


def search_tokens(text: str) -> list[str]:
    """The router's BM25 tokens: ``word_tokens`` without English stop words, each reduced to its
    Snowball (Porter 2) stem, plus ``cjk_bigrams``. Stemming lets "extract features from images"
    meet "image feature extraction"; dropping function words keeps "I want to do this with
    my ..." from matching tools on "my" and "with". Words in other scripts pass unchanged.
    Measured against plain word tokens: benchmarks/DECISIONS.md."""
    words = [word for word in word_tokens(text) if word not in STOP_WORDS]
    stems: list[str] = _english_stemmer().stemWords(words)
    return stems + cjk_bigrams(text)


class LexicalIndex:
    """Okapi BM25 (Lucene variant, k1=1.5, b=0.75). Documents sharing no token with the query
    score 0 and are never returned."""

    def __init__(self, texts: Sequence[str], tokenizer: Tokenizer = word_tokens) -> None:
        self.tokenizer = tokenizer
        self._size = len(texts)
        self._bm25 = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
        corpus = [tokenizer(text) or [""] for text in texts]
        self._bm25.index(corpus, show_progress=False)
        self._vocabulary: dict[str, int] = self._bm25.vocab_dict
        pointers = np.asarray(self._bm25.scores["indptr"])
        self._documents_with = np.diff(pointers)  # per token id: how many tools contain it

    def __len__(self) -> int:
        return self._size

    def scores(self, query: str) -> np.ndarray:
        tokens = [token for token in self.tokenizer(query) if token in self._vocabulary]
        if not tokens or not self._size:
            return np.zeros(self._size, dtype=np.float32)
        return np.asarray(self._bm25.get_scores(tokens), dtype=np.float32)

    def ceiling(self, query: str) -> float:
        """The sum of the query's tokens' IDF, unknown tokens counted as in no tool: BM25 stays
        below it (each term's saturation is under 1), so ``scores(query) / ceiling(query)`` is
        how much of the request's wording a tool covers, from 0 to 1, whatever the catalog's size."""
        total = 0.0
        for token in self.tokenizer(query):
            token_id = self._vocabulary.get(token)
            containing = int(self._documents_with[token_id]) if token_id is not None else 0
            total += float(np.log(1.0 + (self._size - containing + 0.5) / (containing + 0.5)))
        return total

    def search(self, query: str, k: int, allowed: IdArray | None = None) -> tuple[np.ndarray, IdArray]:
        return best_positive(self.scores(query), k, allowed)


def best_positive(scores: np.ndarray, k: int, allowed: IdArray | None = None) -> tuple[np.ndarray, IdArray]:
    """The ``k`` best (score, id) pairs among ``allowed`` (all when None) that score above 0."""
    ids = np.arange(scores.shape[0], dtype=np.int64) if allowed is None else allowed
    candidate_scores = scores[ids]
    positive = candidate_scores > 0
    return top_k(candidate_scores[positive], ids[positive], k)
