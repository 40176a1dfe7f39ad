"""synthformer: the Synthesizer (Tay et al., ICML 2021) for PyTorch."""
from .attention import AttentionCache, SyntheticAttention, parse_synthesizers
from .model import ModelConfig, build_model, count_parameters, load

__version__ = "0.1.0"
__all__ = ["AttentionCache", "ModelConfig", "SyntheticAttention", "build_model", "count_parameters", "load",
           "parse_synthesizers", "__version__"]
