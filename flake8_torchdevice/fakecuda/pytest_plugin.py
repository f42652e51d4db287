"""pytest plugin (entry point ``pytest11``): ``pytest --fake-cuda[=N]`` runs every test as if the
machine had N GPUs (default 1); ``@pytest.mark.fake_cuda(device_count=N)`` runs one test so; the
``fake_cuda`` fixture gives a test its session. torch is imported only when one is used."""

from __future__ import annotations

import pytest

OPTION = "--fake-cuda"


def pytest_addoption(parser):
    group = parser.getgroup("fake-cuda", "fake CUDA (flake8-torchdevice)")
    group.addoption(
        OPTION, nargs="?", const="1", default=None, metavar="N", dest="fake_cuda",
        help="run every test as if the machine had N GPUs (default 1), computing on the CPU: "
        "device mistakes fail with torch's CUDA messages",
    )


def pytest_load_initial_conftests(early_config, parser, args):
    # "--fake-cuda tests/" must not read "tests/" as N: a bare flag means one GPU.
    for i, arg in enumerate(args[:-1]):
        if arg == OPTION and not args[i + 1].isdigit():
            args[i] = f"{OPTION}=1"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "fake_cuda(device_count=1, saved_on_missing_gpu=False): run this test as if the machine had "
        "device_count GPUs (flake8-torchdevice fake CUDA)",
    )
    value = config.getoption("fake_cuda")
    if value is not None and (not str(value).isdigit() or int(value) < 1):
        raise pytest.UsageError(f"{OPTION}: N must be a positive integer, not {value!r}")


def _settings(item):
    marker = item.get_closest_marker("fake_cuda")
    if marker is not None:
        count = marker.args[0] if marker.args else marker.kwargs.get("device_count", 1)
        return {"device_count": count, "saved_on_missing_gpu": marker.kwargs.get("saved_on_missing_gpu", False)}
    value = item.config.getoption("fake_cuda")
    if value is not None:
        return {"device_count": int(value)}
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    settings = _settings(item)
    if settings is None:
        yield
        return
    from flake8_torchdevice.fakecuda import fake_cuda

    with fake_cuda(**settings) as session:
        item.stash[SESSION] = session
        yield


SESSION = pytest.StashKey[object]()


@pytest.fixture
def fake_cuda(request):
    """The fake-CUDA session this test runs in: the marker's or ``--fake-cuda``'s, else one GPU."""
    session = request.node.stash.get(SESSION, None)
    if session is not None:
        yield session
        return
    from flake8_torchdevice.fakecuda import fake_cuda as start

    with start() as session:
        yield session
