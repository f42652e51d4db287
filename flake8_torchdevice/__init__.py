"""flake8-torchdevice: find PyTorch device-handling mistakes before they crash a run."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("flake8-torchdevice")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["__version__"]
