"""flake8-torchdevice: find PyTorch device-handling mistakes before they crash a run."""

__all__ = ["__version__", "check_source", "fix_source"]


def __getattr__(name: str):
    """``__version__``, ``check_source`` and ``fix_source`` on first use:
    importing the package (flake8 does it on every run, the ``torchdevice``
    command before it can handle Ctrl-C) must stay cheap."""
    if name == "check_source":
        from .engine import check_source

        return check_source
    if name == "fix_source":
        from .fixes import fix_source

        return fix_source
    if name != "__version__":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        value = version("flake8-torchdevice")
    except PackageNotFoundError:  # running from a source tree that is not installed
        value = "0+unknown"
    globals()["__version__"] = value
    return value
