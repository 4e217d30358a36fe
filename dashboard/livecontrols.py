"""The sidebar's parameter cards for a live session: one card per engine section, generated from its param class.

The chosen scaling policy's own parameters open inside the policy card and controls the policy does not read are
hidden; the scheduler card has weight presets; the controller's extensions say when seed-exact mode blocks them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import panel as pn
import param

from dashboard.controls import SectionControls
from dashboard.functions import is_function_slot
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


class LiveControls:
    """All generated section controls of one session: the chosen policy's parameters inside the policy card,
    controls that the chosen policy does not read hidden, scheduler presets, the controller's gated extensions."""

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
        live = session.sim.sections
        order = [k for k, _, _ in SECTION_CARDS]
        keys = [k for k in order if k in live] + [k for k in live if k not in order]
        fixed = set(session.fixed_sections())  # whole sections, or single "section.name" parameters
        keys = [k for k in keys if k not in NOT_LIVE | fixed and not is_function_slot(k) and (sections is None or k in sections)]
        titles = {k: (t, c) for k, t, c in SECTION_CARDS}
        self.sections: dict[str, SectionControls] = {}
        for key in keys:
            exclude = tuple(name for name in live[key].values() if f"{key}.{name}" in fixed)
            self.sections[key] = SectionControls(live[key], session.apply, key, exclude=exclude, scope=scope, on_applied=self._applied)
        self._on_applied = on_applied
        self.policy_key = "policy" if "policy" in self.sections else None
        self.policy_cards: dict[str, pn.Card] = {}
        self._fills: list[Callable[[], None]] = []
        self.filled: set[str] = set()  # sections whose card holds its widgets
        self.cards: dict[str, pn.Card] = {}
        for key in keys:
            title, collapsed = titles.get(key, (self._declared_title(key) or (key.upper() if len(key) <= 4 else key.capitalize()), True))
            if self.policy_key and key != self.policy_key and policies_reading(key) is not None:
                # a policy's own section opens inside the policy card, right under the selector (built when first shown)
                self.policy_cards[key] = self._card(key, f"{title} parameters", collapsed=False, visible=False)
            else:
                self.cards[key] = self._card(key, title, collapsed=collapsed or collapsed_all)
        if self.policy_key:
            self.cards[self.policy_key].extend(self.policy_cards.values())
            self._show_policy(live[self.policy_key].kind)
        self.layout = pn.Column(*self.cards.values(), sizing_mode="stretch_width", margin=0)

    def rebind(self) -> bool:
        """A new run (a reset): point every control at the new run's sections and show their values.

        False (nothing changed) when the new run's sections are not of the same classes: the controls must be rebuilt.
        """
        live = self.session.sim.sections if self.session.sim is not None else {}
        if any(key not in live or type(live[key]) is not type(ctl.live) for key, ctl in self.sections.items()):
            return False
        for key, ctl in self.sections.items():
            ctl.live = live[key]
            ctl.sync()
            title = self._declared_title(key)
            if title and key in self.cards:
                self.cards[key].title = title  # a node group's card names the new run's group
        if "controller" in self.sections and self.sections["controller"].built:
            self._gate_extensions(self.sections["controller"])
        if self.policy_key:
            self._show_policy(live[self.policy_key].kind)
        return True

    def _declared_title(self, key: str) -> str | None:
        """The card title the run's world declares for section ``key`` (e.g. a node group's, with its name)."""
        sim = self.session.sim
        return self.session.view.section_title(key, sim.sections[key].values()) if sim is not None else None

    def _card(self, key: str, title: str, collapsed: bool, visible: bool = True) -> pn.Card:
        """A section's card; its controls are made when it is first opened (or shown), not before."""
        ctl = self.sections[key]
        card = pn.Card(ctl.alert, title=title, collapsed=collapsed, visible=visible, sizing_mode="stretch_width", margin=(4, 0))

        def fill(*events: Any) -> None:  # a card opened or shown (an event) fills at once; one open from the start waits
            if key in self.filled or (self.deferred and not events) or card.collapsed or not card.visible:
                return
            self.filled.add(key)
            body: list[Any] = [self._presets_row(ctl)] if key == "scheduler" else []
            body.append(ctl.panel())
            card.objects = [card.objects[0], *body, *card.objects[1:]]  # under the section's message, above policy cards
            self._show_policy_in(key)
            if key == "controller":
                self._gate_extensions(ctl)

        card.param.watch(fill, ["collapsed", "visible"])
        self._fills.append(fill)
        fill()
        return card

    def fill(self) -> None:
        """Give every open card its widgets now (cards made with ``defer``); a collapsed card still waits to be opened."""
        self.deferred = False
        for fill in self._fills:
            fill()

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
        ctl, policy = self.sections[key], getattr(self, "_policy", None)
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
