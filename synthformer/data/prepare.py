"""Fetching Debian data packages into a cache folder, and the data errors.

Debian-packaged sources (the SWORD Bibles, `fortunes`, `dataset-fashion-mnist`) are fetched with
`apt-get download NAME` and unpacked with `dpkg -x` into ``<cache>/debian/NAME/`` -- nothing is
installed system-wide and nothing needs root except an `apt-get update` when the package lists are
missing. Files installed system-wide (e.g. /usr/share/games/fortunes) are used when present.

The cache folder is ``$SYNTHFORMER_DATA`` if set, else ``~/.cache/synthformer``.
"""
from __future__ import annotations

from ..errors import SynthformerError

import os
import shutil
import subprocess
import tempfile
from pathlib import Path


class DataError(SynthformerError):
    """A data source or file cannot be used (bad format, unsupported task, not installed)."""


class SourceNotInstalledError(DataError):
    """A registry source needs files that are not on this machine; the message says how to get them."""


class DataFileNotFoundError(DataError, FileNotFoundError):
    """A user data file or folder does not exist."""


MARKER = ".synthformer-prepared"  # written last, so a half-unpacked package never looks ready


def cache_dir(cache_dir: str | os.PathLike | None = None) -> Path:
    """The data cache folder: the argument, else $SYNTHFORMER_DATA, else ~/.cache/synthformer."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get("SYNTHFORMER_DATA")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "synthformer"


def package_root(package: str, cache: str | os.PathLike | None = None) -> Path:
    """Where `dpkg -x` unpacks Debian package `package` inside the cache (may not exist yet)."""
    return cache_dir(cache) / "debian" / package


def find_package_file(package: str, rel: str, cache: str | os.PathLike | None = None) -> Path | None:
    """Locate `rel` (a path below / such as 'usr/share/sword') installed system-wide or in the cache.

    System-wide files win when present; returns None when neither has them.
    """
    system = Path("/") / rel
    if system.exists():
        return system
    root = package_root(package, cache)
    if (root / MARKER).exists() and (root / rel).exists():
        return root / rel
    return None


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def fetch_debian_package(package: str, cache: str | os.PathLike | None = None) -> Path:
    """Download Debian package `package` and unpack it into the cache; idempotent.

    Runs `apt-get download` (retrying once after `apt-get update` when the package lists are
    missing) and `dpkg -x` into a temporary folder that is renamed into place, so an interrupted
    fetch never leaves a folder that looks ready. Returns the unpacked root folder.
    """
    root = package_root(package, cache)
    if (root / MARKER).exists():
        print(f"{package}: already in {root}")
        return root
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        raise SourceNotInstalledError(
            f"cannot fetch Debian package {package!r}: apt-get/dpkg not found on this machine; "
            f"unpack {package}'s .deb with `dpkg -x` into {root} and create {root / MARKER}")
    root.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root.parent, prefix=f".{package}-") as tmp:
        tmp = Path(tmp)
        res = _run(["apt-get", "download", package], tmp)
        if res.returncode != 0:
            # Fresh machines and containers often have no package lists yet.
            print(f"apt-get download failed ({res.stderr.strip().splitlines()[-1:]}); "
                  "updating package lists", flush=True)
            upd = _run(["apt-get", "update"], tmp)
            if upd.returncode != 0:
                raise SourceNotInstalledError(
                    f"`apt-get update` failed while fetching {package!r} "
                    f"({(upd.stderr.strip().splitlines() or ['?'])[-1]}); run it as root, then retry")
            res = _run(["apt-get", "download", package], tmp)
            if res.returncode != 0:
                raise SourceNotInstalledError(
                    f"`apt-get download {package}` failed: "
                    f"{(res.stderr.strip().splitlines() or ['?'])[-1]}")
        debs = sorted(tmp.glob("*.deb"))
        if not debs:
            raise SourceNotInstalledError(f"`apt-get download {package}` produced no .deb file in {tmp}")
        unpacked = tmp / "root"
        unpacked.mkdir()
        res = _run(["dpkg", "-x", str(debs[0]), str(unpacked)], tmp)
        if res.returncode != 0:
            raise SourceNotInstalledError(f"`dpkg -x {debs[0].name}` failed: {res.stderr.strip()}")
        (unpacked / MARKER).write_text(debs[0].name + "\n")
        if root.exists() and not (root / MARKER).exists():
            shutil.rmtree(root)  # leftovers of an older, interrupted layout
        try:
            os.replace(unpacked, root)
        except OSError:
            if not (root / MARKER).exists():  # lost a race with another process: fine if it finished
                raise
    print(f"{package}: unpacked into {root}")
    return root


VADER_VERSION = "3.3.2"
VADER_MEMBER = "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"


def fetch_vader_movie_reviews(cache: str | os.PathLike | None = None) -> Path:
    """Fetch the VADER sdist with `pip download` and keep its movie-review sentences; idempotent.

    Returns ``<cache>/pypi/vader/movie_reviews.tsv`` (id, mean human rating -4..4, sentence).
    """
    import sys
    import tarfile

    dest = cache_dir(cache) / "pypi" / "vader" / "movie_reviews.tsv"
    if dest.exists():
        print(f"vaderSentiment movie reviews: already in {dest}")
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        tmp = Path(tmp)
        res = _run([sys.executable, "-m", "pip", "download", "--no-binary", ":all:", "--no-deps",
                    f"vaderSentiment=={VADER_VERSION}", "-d", str(tmp)], tmp)
        sdists = sorted(tmp.glob("vaderSentiment-*.tar.gz"))
        if res.returncode != 0 or not sdists:
            raise SourceNotInstalledError(
                f"`pip download vaderSentiment=={VADER_VERSION}` failed: "
                f"{(res.stderr.strip().splitlines() or ['?'])[-1]}")
        with tarfile.open(sdists[0]) as outer:
            inner_name = next(n for n in outer.getnames() if n.endswith("hutto_ICWSM_2014.tar.gz"))
            with tarfile.open(fileobj=outer.extractfile(inner_name)) as inner:
                data = inner.extractfile(VADER_MEMBER).read()
        part = tmp / "movie_reviews.tsv"
        part.write_bytes(data)
        os.replace(part, dest)
    print(f"vaderSentiment movie reviews: written to {dest}")
    return dest
