"""Movie-review sentence sentiment (Hutto & Gilbert 2014, shipped in the vaderSentiment sdist)."""
from __future__ import annotations

from pathlib import Path

from ..prepare import SourceNotInstalledError, cache_dir, fetch_vader_movie_reviews
from .base import Source, capped, no_options, split_by_hash


def vader_path() -> Path:
    """Where `fetch_vader_movie_reviews` keeps the sentences in the cache."""
    return cache_dir() / "pypi" / "vader" / "movie_reviews.tsv"


def load(task, max_examples, seed, **options):
    """Movie-review sentences with mean human sentiment ratings (Hutto & Gilbert 2014, shipped in
    the vaderSentiment sdist): label 1 (positive) when the rating is > 0, 0 (negative) when < 0;
    the 37 sentences rated exactly 0 are dropped. Split 90/5/5 by SHA-1 of the sentence."""
    no_options("sentiment", options)
    path = vader_path()
    if not path.exists():
        raise SourceNotInstalledError("vaderSentiment movie reviews are not in the cache")
    items = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[2].strip() and float(fields[1]) != 0:
            items.append((fields[2].strip(), int(float(fields[1]) > 0)))
    splits = split_by_hash(items, [t for t, _ in items])
    return capped(splits, max_examples, seed), {"labels": ["negative", "positive"],
                                                "split": "90/5/5 by SHA-1 of sentence"}


SENTIMENT = Source(load, ("classify",),
                   "10.6k movie-review sentences, positive/negative (vaderSentiment sdist, MIT)",
                   (), lambda: vader_path().exists(), "synthformer data prepare sentiment",
                   fetch=fetch_vader_movie_reviews)
