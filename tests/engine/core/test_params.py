"""Sections: coercion with one-line errors, atomic application, file checks, mirrors."""

from __future__ import annotations

import math

import param
import pytest

from engine.core.params import Mirror, ParamError, Section, apply_checked, coerce, section_key, split_key, tunable_names


class Demo(Section):
    key = "demo"
    count = param.Integer(3, bounds=(1, 10), doc="a count")
    level = param.Number(0.5, bounds=(0.0, 1.0), doc="a level")
    on = param.Boolean(False, doc="a switch")
    mode = param.Selector(default="a", objects=["a", "b"], doc="a mode")
    pairs = param.List(default=[], doc="a list")
    label = param.String("", doc="a label")

    def check(self) -> None:
        if self.mode == "b" and self.count > 5:
            raise ParamError("demo.count", f"{self.count} with mode b; allowed: <= 5")


class Other(Section):
    key = "other"
    level = param.Number(1.0, bounds=(0.0, 2.0), doc="another level")
    size = param.Integer(1, bounds=(0, 5), doc="a size")


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("count", 11, r"^demo\.count: 11 is out of range; allowed: an integer in \[1, 10\]$"),
        ("count", 2.5, r"^demo\.count: 2\.5 is not allowed; allowed: an integer in \[1, 10\]$"),
        ("count", True, r"not allowed; allowed: an integer"),
        ("level", float("nan"), r"^demo\.level: nan is not allowed"),
        ("level", math.inf, r"^demo\.level: inf is not allowed"),
        ("on", "yes", r"^demo\.on: 'yes' is not allowed; allowed: true or false$"),
        ("mode", "c", r"^demo\.mode: 'c' is not allowed; allowed: one of 'a', 'b'$"),
        ("pairs", 3, r"allowed: a list"),
        ("label", 5, r"allowed: a string"),
        ("nope", 1, r"^demo\.nope: unknown parameter; allowed: count, level, on, mode, pairs, label$"),
    ],
)
def test_coerce_refuses_with_one_line_naming_the_field_and_what_is_allowed(name, value, message):
    with pytest.raises(ParamError, match=message):
        coerce(Demo(), name, value)


def test_coerce_converts_what_it_can():
    d = Demo()
    assert coerce(d, "count", 4.0) == 4 and isinstance(coerce(d, "count", 4.0), int)
    assert coerce(d, "count", "7") == 7 and coerce(d, "level", 1) == 1.0
    assert coerce(d, "pairs", ((1, 2),)) == [[1, 2]]


def test_apply_checked_is_atomic_and_returns_the_coerced_changes():
    sections = {"demo": Demo(), "other": Other()}
    applied = apply_checked(sections, {"demo.count": 4.0, "other.size": 2})
    assert applied == {"demo.count": 4, "other.size": 2} and sections["demo"].count == 4
    with pytest.raises(ParamError, match=r"^demo\.count: 6 with mode b"):
        apply_checked(sections, {"other.size": 5, "demo.mode": "b", "demo.count": 6})
    assert sections["other"].size == 2 and sections["demo"].mode == "a"  # nothing of the refused change applied


def test_a_file_check_runs_on_the_trial_section_before_anything_applies():
    sections = {"demo": Demo()}
    seen = []

    def check(key: str, trial: Section) -> None:
        seen.append((key, trial.label))
        if trial.label == "missing.csv":
            raise ParamError("demo.label", "missing.csv: no such file")

    apply_checked(sections, {"demo.label": "ok.csv"}, check)
    with pytest.raises(ParamError, match="no such file"):
        apply_checked(sections, {"demo.label": "missing.csv", "demo.count": 9}, check)
    assert seen == [("demo", "ok.csv"), ("demo", "missing.csv")] and sections["demo"].label == "ok.csv" and sections["demo"].count == 3


def test_names_are_split_by_section_and_bare_names_must_be_unambiguous():
    sections = {"demo": Demo, "other": Other}
    assert split_key("demo.count", sections) == ("demo", "count") and split_key("size", sections) == ("other", "size")
    with pytest.raises(ParamError, match=r"ambiguous; use one of demo\.level, other\.level"):
        split_key("level", sections)
    with pytest.raises(ParamError, match=r"unknown section 'nope'; allowed: demo, other"):
        split_key("nope.x", sections)
    assert section_key(Demo) == "demo" and tunable_names(Demo) == ["count", "level", "on", "mode", "pairs", "label"]


def test_a_mirror_follows_its_section_as_plain_attributes():
    d = Demo()
    m = Mirror(d)
    assert m.count == 3 and "count" in vars(m)
    d.count = 8
    assert m.count == 8
    d.param.update(level=0.25, on=True)
    assert (m.level, m.on) == (0.25, True)
