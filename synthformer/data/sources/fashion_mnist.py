"""Fashion-MNIST (Debian `dataset-fashion-mnist`) as 784-pixel sequences, LRA-Image style."""
from __future__ import annotations

import gzip
from pathlib import Path

from ..prepare import SourceNotInstalledError, find_package_file
from .base import Source, cap, caps, no_options, packages_installed

FASHION_LABELS = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                  "Sneaker", "Bag", "Ankle boot"]
FASHION_VALID = 5000  # the last 5,000 training images form the validation split
_PROBE = "usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"


def read_idx(path: Path):
    """A gzipped IDX file as a uint8 array: (N, features) for images, (N,) for labels."""
    import numpy as np

    with gzip.open(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    return arr.reshape(dims[0], -1) if ndim > 1 else arr


def load(task, max_examples, seed, **options):
    """Fashion-MNIST (Debian dataset-fashion-mnist, IDX files), LRA-Image style: each example is
    (list of 784 pixel values 0..255, row-major 28x28, label 0..9). Split: the official 10,000
    test images; the last 5,000 of the 60,000 training images are validation (fixed)."""
    no_options("fashion-mnist", options)
    probe = find_package_file("dataset-fashion-mnist", _PROBE)
    if probe is None:
        raise SourceNotInstalledError("Debian package dataset-fashion-mnist is not installed")
    root = probe.parent
    x_tr, y_tr = read_idx(root / "train-images-idx3-ubyte.gz"), read_idx(root / "train-labels-idx1-ubyte.gz")
    x_te, y_te = read_idx(root / "t10k-images-idx3-ubyte.gz"), read_idx(root / "t10k-labels-idx1-ubyte.gz")
    n_tr = len(y_tr) - FASHION_VALID
    parts = ((x_tr, y_tr, range(n_tr)), (x_tr, y_tr, range(n_tr, len(y_tr))), (x_te, y_te, range(len(y_te))))
    out = []
    for (x, y, idx), limit in zip(parts, caps(max_examples)):
        idx = cap(list(idx), limit, seed + len(out))
        out.append([(x[i].tolist(), int(y[i])) for i in idx])
    return tuple(out), {"labels": FASHION_LABELS, "image_shape": (28, 28),
                        "split": "official test; last 5,000 training images as valid"}


FASHION_MNIST = Source(load, ("classify",),
                       "Fashion-MNIST 28x28 images as 784-pixel sequences (Debian dataset-fashion-mnist)",
                       ("dataset-fashion-mnist",), packages_installed(("dataset-fashion-mnist", _PROBE)),
                       "synthformer data prepare fashion-mnist")
