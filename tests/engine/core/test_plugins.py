"""PluginTable: built-ins first, a plugin added by register (listeners told, provenance kept), one-line refusals,
a listener's refusal leaves the table as it was, a re-registration replaces, built-ins cannot be replaced or removed."""

from __future__ import annotations

import pytest

from engine.core.params import ParamError
from engine.core.plugins import PluginError, PluginTable, missing_methods


class Builtin:
    name = "builtin"

    def decide(self):
        return 1


def table() -> PluginTable:
    return PluginTable("test_point", {"builtin": Builtin}, check=lambda cls: missing_methods(cls, "decide"))


def test_a_registered_plugin_follows_the_builtins_and_its_provenance_is_kept():
    t, seen = table(), []
    t.on_register(lambda name, cls: seen.append(name))

    class Mine:
        """Mine."""

        name = "mine"
        version = "2.0"

        def decide(self):
            return 2

    info = t.register(Mine)
    assert list(t) == ["builtin", "mine"] and t["mine"] is Mine and seen == ["mine"]
    assert (info.point, info.name, info.module, info.version) == ("test_point", "mine", __name__, "2.0")
    assert len(info.source_sha256) == 64 and t.info("builtin") is None
    assert [c for c, _ in t.local_plugins()] == [Mine]

    class Mine2(Mine):
        def decide(self):
            return 3

    again = t.register(Mine2)  # a notebook cell run again with an edit
    assert t["mine"] is Mine2 and again.source_sha256 != info.source_sha256


@pytest.mark.parametrize(
    ("plugin", "message"),
    [
        (type("NoName", (), {"decide": lambda self: 0}), "plugin 'NoName' (test_point): needs a class attribute 'name'"),
        (type("Taken", (), {"name": "builtin", "decide": lambda self: 0}), "plugin 'builtin' (test_point): the name is a built-in's"),
        (type("NoDecide", (), {"name": "no_decide"}), "plugin 'no_decide' (test_point): missing method decide"),
    ],
)
def test_a_plugin_that_cannot_be_used_is_one_line_naming_it(plugin, message):
    t = table()
    with pytest.raises(PluginError) as caught:
        t.register(plugin)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)
    assert isinstance(caught.value, ParamError) and list(t) == ["builtin"]


def test_a_listener_that_refuses_leaves_the_table_as_it_was():
    t = table()

    def refuse(name, cls):
        raise ValueError("its section key is taken")

    t.on_register(refuse)
    with pytest.raises(PluginError, match=r"^plugin 'mine' \(test_point\): ValueError: its section key is taken$"):
        t.register(type("Mine", (), {"name": "mine", "decide": lambda self: 0}))
    assert list(t) == ["builtin"] and t.plugins() == {}


def test_builtins_cannot_be_removed_and_a_removed_plugin_is_gone():
    t = table()
    t.register(type("Mine", (), {"name": "mine", "decide": lambda self: 0}))
    t.unregister("mine")
    assert "mine" not in t and t.info("mine") is None
    with pytest.raises(PluginError, match="a built-in cannot be removed"):
        t.unregister("builtin")
