import pytest
import torch

from synthformer.attention import SYNTHESIZERS

torch.set_num_threads(2)

# Every synthesizer alone plus mixtures; used to parametrize the attention contract tests.
SINGLE = list(SYNTHESIZERS)  # a new registry entry is tested (and needs a literal reference) automatically
MIXTURES = ["R+V", "D+V", "R+D", "FR+V", "FD+V", "Fix+FR", "R+D+V"]
ALL_SPECS = SINGLE + MIXTURES


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
