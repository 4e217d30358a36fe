"""A new run swapped into the page keeps the controls of the sections it shares with the old one: the same widgets now
show and change the NEW run (never the old one); a world's own sections get their own cards and leave with it; a
scenario with other functions gets its own per-function cards. In process, no browser."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dashboard.ui import Dashboard
from engine import Simulation, load_recording


def ticked(d: Dashboard, n: int = 3) -> Dashboard:
    for _ in range(n):
        d.session.tick(0.5, budget=10.0)
        d.refresh()
    return d


def next_turns(monkeypatch) -> list:
    """What the page's parts leave to the event loop's next turn (``dashboard.turns``), queued to be run by hand."""
    import dashboard.functions
    import dashboard.podview
    import dashboard.sidebar
    import dashboard.views

    later: list = []
    for module in (dashboard.sidebar, dashboard.functions, dashboard.podview, dashboard.views):
        monkeypatch.setattr(module, "after_this_turn", later.append)
    return later


def cap_control(d: Dashboard):
    return d.controls.sections["autoscaler"].controls["MAX_WORKERS"]


def test_after_a_reset_the_same_control_shows_and_changes_the_new_run_only():
    d = ticked(Dashboard("default"))
    d.session.apply({"autoscaler.MAX_WORKERS": 9})
    d.controls.sections["autoscaler"].sync()
    control, old = cap_control(d), d.session.sim
    d._reset()
    d.refresh()
    new = d.session.sim
    assert new is not old and cap_control(d) is control  # kept: not made again
    assert control.entry.value == 9 == new.sections["autoscaler"].MAX_WORKERS  # the change made so far, shown
    control.entry.value = 11
    assert new.sections["autoscaler"].MAX_WORKERS == 11 and old.sections["autoscaler"].MAX_WORKERS == 9
    assert d.controls.sections["autoscaler"].live is new.sections["autoscaler"]
    d.stop()


def test_a_switch_to_another_world_and_back_shows_each_worlds_controls_driving_the_new_run():
    d = ticked(Dashboard("default"))
    vm_cards = d.controls.cards
    control = cap_control(d)
    d.session.scenario = "faas-basic"
    d.refresh()
    assert "autoscaler" not in d.controls.sections  # the VM world's controls left with it
    assert set(d.controls.cards) == {"scheduler", "hpa", "kpa", "keda", "faas", "function_faults"} - set(d.controls.policy_cards)
    assert all(card in d.controls.layout.objects for card in d.controls.cards.values())
    gone = [card for key, card in vm_cards.items() if key not in d.controls.sections]
    assert gone and not any(card is shown for card in gone for shown in shown_cards(d))  # hidden, kept in the page
    assert all(any(card is kept for kept in d.controls.layout.objects) for card in gone)
    faas = d.session.sim
    assert d.controls.sections["faas"].controls  # a collapsed card's widgets, made when first asked for
    d.session.scenario = "default"
    d.refresh()
    new = d.session.sim
    assert cap_control(d) is control and control.entry.value == new.sections["autoscaler"].MAX_WORKERS
    control.entry.value = 13
    assert new.sections["autoscaler"].MAX_WORKERS == 13
    assert "autoscaler" not in faas.sections
    assert shown_cards(d) == list(d.controls.cards.values())
    assert all(any(card is kept for kept in d.controls.layout.objects) for card in vm_cards.values())  # the same cards
    d.stop()


def shown_cards(d: Dashboard) -> list:
    """The sidebar's parameter cards a person sees (another world's stay in the page, hidden by their style)."""
    return [card for card in d.controls.layout.objects if card.styles.get("display") != "none"]


def test_a_branch_keeps_the_controls_and_they_change_the_branch_not_the_live_run_before(tmp_path: Path):
    sim = Simulation("default")
    sim.advance(900.0)
    rec = load_recording(sim.record(tmp_path / "default.scalelab"))
    d = ticked(Dashboard("default"))
    control, before = cap_control(d), d.session.sim
    d.recordings.open(rec)
    d.recordings.branch(rec, 600.0)  # unserved: made at once
    branch = d.session.sim
    assert d.session.branched_from is rec and branch is not before
    assert cap_control(d) is control and control.entry.value == branch.sections["autoscaler"].MAX_WORKERS
    was = before.sections["autoscaler"].MAX_WORKERS
    control.entry.value = was + 3
    assert branch.sections["autoscaler"].MAX_WORKERS == was + 3 and before.sections["autoscaler"].MAX_WORKERS == was
    d.stop()


def _function_cards(d: Dashboard) -> dict[str, object]:
    tab = d.tabset.views["Functions"]
    return {key: ctl for key, ctl in tab.view.section_controls.items()}


def test_per_function_cards_are_kept_across_a_reset_and_a_scenario_with_other_functions_gets_its_own():
    d = ticked(Dashboard("faas-basic"))
    tab = d.tabset.views["Functions"]
    before, cards = _function_cards(d), list(tab.view.controls.objects)
    old = d.session.sim
    d._reset()
    ticked(d, 1)
    new = d.session.sim
    assert _function_cards(d) == before and list(tab.view.controls.objects) == cards  # the same widgets and cards
    ctl = before["fn1"]
    assert ctl.live is new.sections["fn1"]
    ctl.controls["max_replicas"].entry.value = 7
    assert new.sections["fn1"].max_replicas == 7 and old.sections["fn1"].max_replicas != 7
    d.session.scenario = "faas-edge"
    ticked(d, 1)
    sections = d.session.sim.sections
    slots = {k for k in sections if k.startswith("fn") and k[2:].isdigit()}
    assert set(_function_cards(d)) == slots
    titles = [card.title for card in tab.view.controls.objects]
    assert titles == [f"{sections[k].label} ({sections[k].scaler})" for k in sections if k in slots]
    for key, ctl in _function_cards(d).items():
        assert ctl.live is sections[key]
    d.stop()


def test_a_switch_draws_the_new_worlds_plots_before_its_cards_and_fault_buttons_which_follow_in_the_next_turn(monkeypatch):
    """Served, a switch to another world sends its first frame first; its sidebar cards and fault buttons are made in the
    event loop's next turn (``dashboard.turns``), here run by hand. A Reset keeps the cards and rebinds them at once."""
    later = next_turns(monkeypatch)
    d = ticked(Dashboard("default"))
    d.start()
    vm_cards, vm_faults = dict(d.controls.cards), set(d.fault_card.buttons)
    d.session.scenario = "faas-basic"
    d.refresh()
    fn = d.tabset.active_view()
    assert d.active_tab == "Functions" and min(fn.view.plots.held().values()) >= 2  # the new world's plots hold data
    assert d.controls.cards == vm_cards and set(d.fault_card.buttons) == vm_faults and later  # the sidebar waits its turn
    while later:
        later.pop(0)()
    assert "autoscaler" not in d.controls.cards and set(d.controls.cards) <= {"scheduler", "hpa", "kpa", "keda", "faas", "function_faults"}
    assert set(d.fault_card.buttons) != vm_faults and fn.view.controls.objects  # the functions world's faults, per-function cards
    assert all(ctl.live is d.session.sim.sections[key] for key, ctl in d.controls.sections.items())
    faas = d.session.sim
    d._reset()
    d.refresh()
    assert d.session.sim is not faas  # a Reset: the same cards, on the new run's sections before any later turn
    assert all(ctl.live is d.session.sim.sections[key] for key, ctl in d.controls.sections.items())
    d.stop()


def test_a_tab_back_after_another_worlds_runs_holds_its_top_plots_first_and_the_rest_after_the_turn(monkeypatch):
    later = next_turns(monkeypatch)
    d = ticked(Dashboard("default"))
    d.start()
    live = d.live_tab
    whole = list(live.__panel__().objects)
    for scenario in ("openb-fgd", "default"):
        d.session.scenario = scenario
        d.refresh()
        if scenario == "openb-fgd":
            assert len(d.tabset.active_view().grid) == 2  # the GPU tab's top row first
            while later:
                later.pop(0)()
            assert len(d.tabset.active_view().grid) == 5
    assert d.active_tab == "Live" and [p.object.name for p in live.series.layout] == ["ts-queue", "ts-time_left", "ts-workers"]
    assert list(live.__panel__().objects) == whole[:1] and live.series.streams["live"].rows() >= 2  # the new run's rows
    while later:
        later.pop(0)()
    assert len(live.series.layout) == 6 and list(live.__panel__().objects) == whole
    d.stop()


def test_the_functions_tab_back_after_another_world_holds_its_top_plots_first_and_draws_the_new_run(monkeypatch):
    """faas-basic, the VM world, faas-basic again: the Functions tab keeps its figures, sends its top row first (the
    other plots, the replica heatmap and the per-function controls after the turn) and draws the new run's rows only."""
    later = next_turns(monkeypatch)
    d = ticked(Dashboard("faas-basic"))
    d.start()
    while later:
        later.pop(0)()
    fn = d.tabset.active_view()
    whole, panes, figures = list(fn.view.layout.objects), list(fn.view.plots.layout.objects), dict(fn.view.plots.figures)
    assert d.active_tab == "Functions" and len(panes) == 5 and len(whole) == 6
    old = d.session.sim
    old.advance(3600.0)  # the old run well past where the new one starts
    d.refresh()
    for scenario in ("default", "faas-basic"):
        d.session.scenario = scenario
        d.refresh()
    new = d.session.sim
    assert new is not old and new.now < old.now and d.active_tab == "Functions" and d.tabset.active_view() is fn
    assert list(fn.view.plots.layout.objects) == panes[:2] and list(fn.view.layout.objects) == whole[:3]  # the top first
    assert fn.view.plots.figures == figures  # the same figures, not made again
    samples = new.frame("function_samples")
    for f, streamed in fn.view.plots.streams.items():
        held = np.asarray(streamed.source.data["time"])
        assert len(held) >= 2 and np.array_equal(held, samples.loc[samples["function"] == f, "time"].to_numpy()[-len(held) :])
        assert held[-1] <= new.now  # none of the old run's later rows
    while later:
        later.pop(0)()
    assert list(fn.view.plots.layout.objects) == panes and list(fn.view.layout.objects) == whole
    d.stop()
