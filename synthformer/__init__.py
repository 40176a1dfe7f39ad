"""synthformer: the Synthesizer (Tay et al., ICML 2021) for PyTorch."""
from .attention import AttentionCache, SyntheticAttention, parse_synthesizers

__version__ = "0.1.0"
__all__ = ["AttentionCache", "SyntheticAttention", "parse_synthesizers", "__version__"]
