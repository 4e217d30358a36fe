"""The sidebar's parameter cards for a live session: one card per engine section, generated from its param class.

The chosen scaling policy's own parameters open inside the policy card and controls the policy does not read are
hidden; the scheduler card has weight presets; the controller's extensions say when seed-exact mode blocks them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import panel as pn
import param

from dashboard.controls import SectionControls
from dashboard.functions import is_function_slot
from dashboard.messageline import display_style
from dashboard.session import LiveSession
from engine import SCHEDULER_PRESETS, policies_reading

#: Order and titles of the control cards, and whether each starts collapsed; sections not named follow, collapsed.
SECTION_CARDS = [
    ("policy", "Scaling policy", False),
    ("autoscaler", "Autoscaler (queue drain and VM lifecycle)", False),
    ("scheduler", "Scheduler", False),
    ("controller", "Controller: seed-exact mode and extensions", True),
    ("workload", "Workload", True),
    ("faults", "Random faults", True),
    ("platform", "Platform", True),
]
#: Sections that are not live controls: seed and timing are run controls; the cluster's layout is fixed per run.
NOT_LIVE = {"run", "cluster"}


def scheduler_presets(section: Any) -> dict[str, dict[str, Any]]:
    """Weight presets offered by the scheduler's param class (Skippy default, kube default), by button label."""
    return {name.capitalize(): type(section).preset(name) for name in SCHEDULER_PRESETS}


@dataclass
class _Card:
    """One section's card and controls, kept across runs whose section has the same class (and the same fixed names)."""

    ctl: SectionControls
    card: pn.Card
    in_policy: bool  # inside the policy card, under its selector
    body: list[Any] = field(default_factory=list)  # the widgets, once the card was filled

    @property
    def filled(self) -> bool:
        return bool(self.body)


class LiveControls:
    """All generated section controls of one session: the chosen policy's parameters inside the policy card,
    controls that the chosen policy does not read hidden, scheduler presets, the controller's gated extensions.

    A new run (a reset, another scenario, a branch) keeps the cards and widgets of every section whose class it shares
    with a run shown before: they are pointed at the new run's sections and show its values (:meth:`rebind`); only a
    section never seen gets new widgets, and the sidebar's list of cards changes only when the sections do."""

    def __init__(
        self,
        session: LiveSession,
        sections: tuple[str, ...] | None = None,
        collapsed_all: bool = False,
        scope: str = "live",
        on_applied: Callable[[dict[str, Any]], None] | None = None,
        defer: bool = False,
    ):
        self.session = session
        self.deferred = defer  # open cards stay empty until fill() (a page's first frame comes sooner)
        self.only = sections
        self.collapsed_all = collapsed_all
        self.scope = scope
        self._on_applied = on_applied
        self._pool: dict[tuple, _Card] = {}  # every card made so far, by (key, section class, fixed names, placement)
        self._shown: dict[str, _Card] = {}  # the live run's, by section key, in the sidebar's order
        self._shown_pooled: list[tuple[str, tuple]] = []  # and their pool keys
        self.layout = pn.Column(sizing_mode="stretch_width", margin=0)
        self.rebind()

    @property
    def sections(self) -> dict[str, SectionControls]:
        """The live run's section controls, by section key."""
        return {key: entry.ctl for key, entry in self._shown.items()}

    @property
    def cards(self) -> dict[str, pn.Card]:
        """The sidebar's cards, by section key (a policy's own section is in :attr:`policy_cards`)."""
        return {key: entry.card for key, entry in self._shown.items() if not entry.in_policy}

    @property
    def policy_cards(self) -> dict[str, pn.Card]:
        """The chosen policy's own sections' cards, inside the policy card."""
        return {key: entry.card for key, entry in self._shown.items() if entry.in_policy}

    @property
    def filled(self) -> set[str]:
        """Sections whose card holds its widgets."""
        return {key for key, entry in self._shown.items() if entry.filled}

    def _wanted(self) -> list[tuple[str, tuple, bool]]:
        """The live run's cards in the sidebar's order: (section key, pool key, inside the policy card)."""
        live = self.session.sim.sections
        order = [k for k, _, _ in SECTION_CARDS]
        keys = [k for k in order if k in live] + [k for k in live if k not in order]
        fixed = set(self.session.fixed_sections())  # whole sections, or single "section.name" parameters
        keys = [k for k in keys if k not in NOT_LIVE | fixed and not is_function_slot(k) and (self.only is None or k in self.only)]
        policy_key = "policy" if "policy" in keys else None
        wanted = []
        for key in keys:
            exclude = tuple(name for name in live[key].values() if f"{key}.{name}" in fixed)
            in_policy = bool(policy_key) and key != policy_key and policies_reading(key) is not None
            wanted.append((key, (key, type(live[key]), exclude, in_policy), in_policy))
        return wanted

    def same_cards(self) -> bool:
        """Would :meth:`rebind` keep the sidebar's cards as they are (only their values change: a Reset, a branch)?"""
        if self.session.sim is None:
            return True
        return [(key, pooled) for key, pooled, _ in self._wanted()] == self._shown_pooled

    def rebind(self) -> None:
        """Show the session's run: every control on the new run's sections, showing its values. A section of a class
        shown before keeps its card and widgets (a change made with them goes to the new run); a new one gets a card;
        those the run does not have leave the sidebar."""
        s = self.session
        if s.sim is None:
            return
        live = s.sim.sections
        wanted = self._wanted()
        self.policy_key = "policy" if any(key == "policy" for key, _, _ in wanted) else None
        titles = {k: (t, c) for k, t, c in SECTION_CARDS}
        shown: dict[str, _Card] = {}
        for key, pooled, in_policy in wanted:
            exclude = pooled[2]
            title, collapsed = titles.get(key, (self._declared_title(key) or (key.upper() if len(key) <= 4 else key.capitalize()), True))
            title = f"{title} parameters" if in_policy else title
            entry = self._pool.get(pooled)
            if entry is None:
                ctl = SectionControls(live[key], s.apply, key, exclude=exclude, scope=self.scope, on_applied=self._applied)
                # a policy's own section opens inside the policy card, right under the selector (built when first shown)
                card = self._card(ctl, title, collapsed=False if in_policy else collapsed or self.collapsed_all, visible=not in_policy)
                entry = self._pool[pooled] = _Card(ctl, card, in_policy)
                self._watch_fill(entry)
            else:
                entry.ctl.rebind(live[key])
                entry.card.title = title  # a node group's card names the new run's group
            shown[key] = entry
        self._shown = shown
        self._shown_pooled = [(key, pooled) for key, pooled, _ in wanted]
        if self.policy_key:
            self._nest_policy_cards()
            self._show_policy(live[self.policy_key].kind)
        for entry in shown.values():
            self._fill(entry)
        if "controller" in shown and shown["controller"].filled:
            self._gate_extensions(shown["controller"].ctl)
        # the cards of another world's run stay in the page, hidden: back to that world, they are shown again rather than
        # made again by the page (a switch back to the VM world sent ~50 kB of card models after its first frame)
        cards = list(self.cards.values())
        earlier = [card for card in self.layout.objects if all(card is not c for c in cards)]
        for card, shown in [*((c, True) for c in cards), *((c, False) for c in earlier)]:
            if card.styles.get("display", "flex") != display_style(shown, "flex")["display"]:
                card.styles = display_style(shown, "flex")
        if list(self.layout.objects) != cards + earlier:  # the same sections: the sidebar keeps its models, only values change
            self.layout.objects = cards + earlier

    def _nest_policy_cards(self) -> None:
        entry = self._shown[self.policy_key]
        objects = [entry.ctl.alert, *entry.body, *self.policy_cards.values()]
        if list(entry.card.objects) != objects:
            entry.card.objects = objects

    def _declared_title(self, key: str) -> str | None:
        """The card title the run's world declares for section ``key`` (e.g. a node group's, with its name)."""
        sim = self.session.sim
        return self.session.view.section_title(key, sim.sections[key].values()) if sim is not None else None

    @staticmethod
    def _card(ctl: SectionControls, title: str, collapsed: bool, visible: bool = True) -> pn.Card:
        """A section's card; its controls are made when it is first opened (or shown), not before."""
        return pn.Card(ctl.alert, title=title, collapsed=collapsed, visible=visible, sizing_mode="stretch_width", margin=(4, 0))

    def _watch_fill(self, entry: _Card) -> None:
        entry.card.param.watch(lambda *events: self._fill(entry, opened=True), ["collapsed", "visible"])

    def _fill(self, entry: _Card, opened: bool = False) -> None:
        """A card opened or shown (``opened``) fills at once; one open from the start waits for :meth:`fill`."""
        card, ctl = entry.card, entry.ctl
        if entry.filled or (self.deferred and not opened) or card.collapsed or not card.visible:
            return
        key = ctl.key
        entry.body = [self._presets_row(ctl)] if key == "scheduler" else []
        entry.body.append(ctl.panel())
        card.objects = [card.objects[0], *entry.body, *card.objects[1:]]  # under the section's message, above policy cards
        if self._shown.get(key) is entry:
            self._show_policy_in(key)
            if key == "controller":
                self._gate_extensions(ctl)

    def fill(self) -> None:
        """Give every open card its widgets now (cards made with ``defer``); a collapsed card still waits to be opened."""
        self.deferred = False
        for entry in self._shown.values():
            self._fill(entry)

    def fill_one(self) -> bool:
        """Give the first open card still without widgets its widgets (a page's start fills one card per turn); False
        when none is left, and from then on a card shown fills at once (as after :meth:`fill`)."""
        for entry in self._shown.values():
            if not entry.filled and not entry.card.collapsed and entry.card.visible:
                deferred, self.deferred = self.deferred, False
                self._fill(entry)
                self.deferred = deferred
                return True
        self.deferred = False
        return False

    def _applied(self, changes: dict[str, Any]) -> None:
        if self.policy_key and f"{self.policy_key}.kind" in changes:
            self._show_policy(changes[f"{self.policy_key}.kind"])
        if any(k.startswith("controller.") for k in changes) and "controller" in self.sections and self.sections["controller"].built:
            self._gate_extensions(self.sections["controller"])
        if self._on_applied is not None:
            self._on_applied(changes)

    def _show_policy(self, policy: str) -> None:
        """Show the chosen policy's sections and hide every control that only other policies read."""
        self._policy = policy
        for key, card in self.policy_cards.items():
            card.visible = policy in (policies_reading(key) or {policy})
        for key in self.sections:
            self._show_policy_in(key)

    def _show_policy_in(self, key: str) -> None:
        ctl, policy = self._shown[key].ctl, getattr(self, "_policy", None)
        if policy is None or not ctl.built:
            return
        for control in ctl.controls.values():
            readers = [policies_reading(f"{key}.{n}") for n in control.names]
            control.visible = all(r is None or policy in r for r in readers)

    @staticmethod
    def _gate_extensions(ctl: SectionControls) -> None:
        """The controller's extensions can only be switched on with seed-exact mode off: say so on the toggles."""
        seed_exact = ctl.live.seed_exact
        for name, control in ctl.controls.items():
            if name == "seed_exact" or not isinstance(ctl.live.param[name], param.Boolean):
                continue
            w = control.widget
            doc = ctl.live.param[name].doc
            w.disabled = seed_exact and not getattr(ctl.live, name)
            control.icon.value = f"{doc} (Disabled: switch seed-exact mode off first.)" if w.disabled else doc

    def _presets_row(self, ctl: SectionControls) -> pn.Row:
        buttons = []
        for label, values in scheduler_presets(ctl.live).items():
            b = pn.widgets.Button(
                label=label,
                color="default",
                sizing_mode="stretch_width",
                description=f"Set every weight to the {label.lower()}: "
                + ", ".join(f"{k.removeprefix('weight_')} {v:g}" for k, v in values.items()),
                css_classes=[f"preset-{ctl.scope}-{label.replace(' ', '-').lower()}"],
            )
            b.on_click(lambda e, v=values: ctl.set_values(dict(v)))
            buttons.append(b)
        return pn.Row(*buttons, sizing_mode="stretch_width")
