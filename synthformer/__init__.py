"""synthformer: the Synthesizer (Tay et al., ICML 2021) for PyTorch."""
import warnings

# The core install is torch without numpy, and `import torch` then warns "Failed to initialize NumPy";
# nothing of the core needs numpy (tensor.numpy() still raises where used). Silenced so that the CLI's
# message naming the extra to install stays one line (tests/test_packaging.py, core-only venv).
warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)

from .attention import AttentionCache, SyntheticAttention, parse_synthesizers
from .model import ModelConfig, build_model, count_parameters, load

__version__ = "0.1.0"
__all__ = ["AttentionCache", "ModelConfig", "SyntheticAttention", "build_model", "count_parameters", "load",
           "parse_synthesizers", "__version__"]
