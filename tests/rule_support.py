"""A rule with its selection switched off: the baseline that proves the
selection (text triggers, then ``wants_statement``) never hides a finding."""

from __future__ import annotations


def parse_everything(rule):
    """A copy of ``rule`` whose trigger hits every line and which wants every
    statement: the engine then parses and walks the whole file, so any
    difference from ``rule`` is a selection step that under-matched."""

    def every_line(cls, source):
        return [0] + [i + 1 for i, char in enumerate(source) if char == "\n"]

    def every_statement(cls, chain, source):
        return True

    members = {"trigger_offsets": classmethod(every_line), "wants_statement": classmethod(every_statement)}
    copy = type(rule.__name__, (rule,), members)
    assert copy.CODE == rule.CODE
    return copy
