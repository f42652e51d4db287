"""flake8-torchdevice: find PyTorch device-handling mistakes before they crash a run."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("flake8-torchdevice")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = ["__version__", "check_source", "fix_source"]


def __getattr__(name: str):
    """``check_source`` and ``fix_source`` on demand: importing the package
    (as flake8 does for every run) must stay cheap."""
    if name == "check_source":
        from .engine import check_source

        return check_source
    if name == "fix_source":
        from .fixes import fix_source

        return fix_source
    raise AttributeError(name)
