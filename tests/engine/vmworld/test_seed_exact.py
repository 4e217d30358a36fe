"""Seed-exact mode (the default) against the original's arithmetic, and each extension switched on and off."""

from __future__ import annotations

import pytest
from controller_support import A, FakeCloud, Harness, K, S, adopted, kinds, only, settled

from engine.autoscaling.seed_conf import AutoscalerParams
from engine.core.params import ParamError
from engine.vmworld.controller import VMController
from engine.vmworld.model import CONTROLLER_PORT, Heartbeat, VMType, vm_address
from engine.vmworld.params import ControllerParams

FLOAT = {"seed_exact": False}


def modes(**values) -> ControllerParams:
    return ControllerParams(**values)


def test_seed_exact_is_the_default_and_refuses_the_extensions():
    p = ControllerParams()
    assert p.seed_exact and not p.drain_above_cap and not p.cap_resumes and p.extensions_on == []
    for name in ("drain_above_cap", "cap_resumes", "resume_when_stuck", "resume_timeout"):
        with pytest.raises(ParamError, match=rf"^controller\.{name}: is an extension of the seed .*seed_exact false first"):
            ControllerParams(**{name: True}).check()
        ControllerParams(seed_exact=False, **{name: True}).check()


@pytest.mark.parametrize(
    ("mode", "round_at", "expected"),
    [
        ({}, 110.757, (K.INIT, "r6_init_resend")),  # whole-second now 110: 110 - 50.757 = 59.243 s, not older than 60
        ({}, 110.9, (K.INIT, "r6_init_resend")),  # still 110: 59.243 s
        ({}, 111.0, (K.DELETE, "r6_transition_timeout")),  # 111 - 50.757 = 60.243 s
        (FLOAT, 110.9, (K.DELETE, "r6_transition_timeout")),  # the float clock: 60.143 s
    ],
)
def test_a_command_sent_at_50_757_s_is_timed_from_a_whole_second_now(mode, round_at, expected):
    h = adopted((2, S.ACTIVE), MAX_TRANSITION_TIME=60.0, modes=modes(**mode))
    h.now = 50.757 - 10.0
    d = h.step({2: A.READY})  # no command yet and READY: INIT, stamped with its fractional send time
    assert only(d, 2) == (K.INIT, "r10_adopt_init") and h.scaler.last_command(2) == (50.757, K.INIT)
    h.now = round_at - 10.0
    d = h.step({2: A.READY})  # still READY after INIT: re-send until MAX_TRANSITION_TIME, then DELETE
    assert only(d, 2) == expected


@pytest.mark.parametrize(("mode", "expected"), [({}, None), (FLOAT, (K.DELETE, "r3_stale_heartbeat"))])
def test_a_heartbeat_received_at_200_2_s_is_9_8_s_old_at_a_round_at_210_5_s(mode, expected):
    h = settled(active=1, modes=modes(**mode))  # worker 2 RUNNING after INIT (t=20)
    h.now = 190.0
    d = h.step({2: Heartbeat(200.2, A.RUNNING, avg_time=5.0, threads=2)}, dt=10.2)
    assert only(d, 2) is None
    d = h.step(dt=10.3)  # t=210.5, nothing new from worker 2; DECISION_INTERVAL is 10
    assert only(d, 2) == expected


@pytest.mark.parametrize(("mode", "stamp", "seconds"), [({}, 12.0, 8.0), (FLOAT, 12.6, 8.3)])
def test_adopted_vms_and_running_time_are_stamped_in_whole_seconds(mode, stamp, seconds):
    controller = VMController(AutoscalerParams(), FakeCloud([(1, VMType.MASTER, S.ACTIVE)]), modes=modes(**mode))
    controller.start(12.6)  # the original: self._time_started = int(time.time())
    assert controller.last_command(1) == (stamp, None)
    assert controller.vm_seconds(20.9) == pytest.approx(seconds)  # seed: int(20.9) - 12


def test_heartbeats_keyed_by_sender_address_reach_their_vm_and_unknown_senders_are_ignored():
    h = adopted((2, S.ACTIVE), (3, S.ACTIVE))
    now = h.now + 10.0
    beats = {
        (vm_address(2), CONTROLLER_PORT): [Heartbeat(now, A.RUNNING, threads=2)],
        vm_address(3): [Heartbeat(now, A.READY)],
        ("10.9.9.9", CONTROLLER_PORT): [Heartbeat(now, A.RUNNING)],
        1: [Heartbeat(now, A.RUNNING, queue_length=4)],
    }
    h.now = now
    h.scaler.step(now, beats)
    assert [hb.app_state for hb in h.scaler.heartbeats(2)] == [A.RUNNING]
    assert [hb.app_state for hb in h.scaler.heartbeats(3)] == [A.READY]
    assert h.scaler.heartbeats(1)[-1].queue_length == 4
    assert all(vm.address != "10.9.9.9" for vm in h.cloud.list_vms())


def _cap_lowered(extension: dict) -> tuple[Harness, list]:
    """Six RUNNING workers, MAX_WORKERS lowered to 3 with the queue inside the band."""
    h = settled(active=6, MAX_WORKERS=10, modes=modes(**extension))
    h.params.MAX_WORKERS = 3
    d = h.step(running=h.active_ids, queue=[48])  # 48/12*5 = 20 s: inside the band, no scaling
    return h, kinds(d)


def test_drain_above_cap_off_drains_nothing_and_on_drains_the_surplus():
    _, sent = _cap_lowered({})
    assert (K.SHUTDOWN, "cap_shutdown") not in sent
    _, sent = _cap_lowered({"seed_exact": False, "drain_above_cap": True})
    assert sent.count((K.SHUTDOWN, "cap_shutdown")) == 3


@pytest.mark.parametrize(("extension", "resumed"), [({}, 4), ({"seed_exact": False, "cap_resumes": True}, 1)])
def test_cap_resumes_keeps_scale_out_resumes_within_max_workers(extension, resumed):
    # 2 RUNNING + 4 suspended workers; MAX_WORKERS 3 (lowered); a long queue wants many more
    h = settled(active=2, suspended=4, MAX_WORKERS=10, modes=modes(**extension))
    h.params.MAX_WORKERS = 3
    d = h.step(running=h.active_ids, queue=[400])
    assert d.action == "scale_out"
    assert kinds(d).count((K.RESUME, "scale_out_resume")) == resumed
    assert (K.CREATE, "scale_out_create") not in kinds(d)  # creates stop at the cap in both modes
