"""``layout_free``: the key two expressions share when they are the same code (TDV201's round
trips, TDV111's self-assignment), whatever their layout -- a string's quotes and joined parts
included -- and only then."""

from __future__ import annotations

import libcst as cst
import pytest

from flake8_torchdevice.analysis.code import layout_free


def key(code: str) -> tuple:
    return layout_free(cst.parse_expression(code))


@pytest.mark.parametrize("left, right", [
    ("os.path.join(d, 'a.pt')", 'os.path.join( d ,\n "a.pt")'),
    ("d + '/' + name + '.pth'", 'd + "/" + name + ".pth"'),
    ("'ckpt/' 'last.pth'", '"ckpt/last.pth"'),
    ("'''x.pt'''", "'x.pt'"),
    ("r'a\\b.pt'", "'a\\\\b.pt'"),
    ("f'{d}/x.pt'", 'f"{d}/x.pt"'),
])
def test_layout_is_not_meaning(left, right):
    assert key(left) == key(right)


@pytest.mark.parametrize("left, right", [
    ("'a.pt'", "'b.pt'"),
    ("'a.pt'", "b'a.pt'"),  # bytes and text are different values
    ("d + '/a.pt'", "e + '/a.pt'"),
    ("f'{d}/x.pt'", "f'{e}/x.pt'"),
    ("'a' + b", "'a' + c"),
])
def test_different_code_has_a_different_key(left, right):
    assert key(left) != key(right)


def test_holes_are_one_placeholder_each():
    epoch, best = (cst.parse_expression(f"'{{}}.pkl'.format({name})") for name in ("epoch", "best_epoch"))
    holes = {id(arg) for call in (epoch, best) for arg in call.args}
    assert layout_free(epoch, holes) == layout_free(best, holes) != layout_free(epoch)
