import pytest
import torch

torch.set_num_threads(2)

# Every synthesizer alone plus mixtures; used to parametrize the attention contract tests.
SINGLE = ["vanilla", "dense", "random", "fixed_random", "factorized_random", "factorized_dense"]
MIXTURES = ["R+V", "D+V", "R+D", "FR+V", "FD+V", "Fix+FR", "R+D+V"]
ALL_SPECS = SINGLE + MIXTURES


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
