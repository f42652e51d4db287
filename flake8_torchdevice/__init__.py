"""flake8-torchdevice: find PyTorch device-handling mistakes before they crash a run."""

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    # Looked up on first use: importlib.metadata costs ~50 ms of imports, paid
    # before the ``torchdevice`` command can handle Ctrl-C as one line.
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("flake8-torchdevice")
    except PackageNotFoundError:  # running from a source tree that is not installed
        value = "0+unknown"
    globals()["__version__"] = value
    return value
