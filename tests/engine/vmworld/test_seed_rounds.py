"""Golden round-by-round command sequences of the original ``VMScheduler``, written from its logic.

Each script drives the controller on a hand-moved fake cloud and lists, round by round, every command the
original sends, in its order. What the scripts pin down (``_handle_master`` in the seed):

* a DELETE verdict for the master (stale heartbeats, FAILED): the new master's CREATE, then a SUSPEND for every
  other VM not already SUSPENDED (booting ones too), then the old master's DELETE; nothing else that round;
* while waiting for the master, in the round it is found ACTIVE and RUNNING: the initial worker's CREATE (when
  no worker is listed), then a RESUME for every VM whose last command was SUSPEND, and *then the master's own
  next command*: the call under "Still execute the master command" stands after the if/else, so it runs in the
  recovery round too (an adopted master gets its INIT there, not a round later);
* in every other waiting round, only the master's own command.

Times are whole seconds, so the whole-second clock of seed-exact mode and the float clock agree: every script
runs in both modes.
"""

from __future__ import annotations

import pytest
from controller_support import MASTER, WORKER, A, FakeCloud, K, S

from engine.autoscaling.seed_conf import AutoscalerParams
from engine.vmworld.controller import VMController
from engine.vmworld.model import Heartbeat
from engine.vmworld.params import ControllerParams

QUEUE = 8  # master queue: with 2 threads x 5 s per task per RUNNING worker, 8 jobs drain in 20 s (1 worker)


def _round(controller: VMController, cloud: FakeCloud, now: float, beats: dict[int, A], queue: int = QUEUE):
    heartbeats = {
        vm_id: [Heartbeat(now, state, queue_length=queue if cloud.vms[vm_id].type == MASTER else 0, avg_time=5.0, threads=2)]
        for vm_id, state in beats.items()
    }
    before = len(cloud.sent)
    decision = controller.step(now, heartbeats)
    assert list(decision.commands) == cloud.sent[before:]
    return decision, [(c.kind, c.vm_id, c.rule) for c in decision.commands]


def play(vms, script, seed_exact: bool, reactive: bool = False):
    """Run ``script``: rounds every 10 s of (cloud state changes before the round, heartbeats, expected action,
    expected commands in order). Returns the controller for further checks."""
    cloud = FakeCloud(vms, reactive=reactive)
    controller = VMController(AutoscalerParams(), cloud, modes=ControllerParams(seed_exact=seed_exact))
    controller.start(0.0)
    for number, (changes, beats, action, expected) in enumerate(script, start=1):
        for vm_id, state in changes.items():
            cloud.set(vm_id, state)
        decision, sent = _round(controller, cloud, 10.0 * number, beats)
        assert (number, decision.action, sent) == (number, action, expected)
    return controller


MODES = pytest.mark.parametrize("seed_exact", [True, False], ids=["seed_exact", "float_clock"])


@MODES
def test_cold_start_with_an_adopted_master_sends_its_init_in_the_round_it_is_found_running(seed_exact):
    vms = [(1, MASTER, S.ACTIVE), (2, WORKER, S.ACTIVE), (3, WORKER, S.SUSPENDED)]
    script = [
        # adopted master RUNNING, no command yet: recount (2 workers), no SUSPEND to undo, then its own INIT (rule 10)
        ({}, {1: A.RUNNING, 2: A.RUNNING}, "master_recovered", [(K.INIT, 1, "r10_adopt_init")]),
        # scaling rounds: worker 2 adopted RUNNING gets INIT; 3 is SUSPENDED; 2 master heartbeats < 3: not measured
        ({}, {1: A.RUNNING, 2: A.RUNNING}, "not_measured", [(K.INIT, 2, "r10_adopt_init")]),
        # 3 master heartbeats: time_left = 8 / 2 threads * 5 s = 20 s, inside [10, 30]
        ({}, {1: A.RUNNING, 2: A.RUNNING}, "hold", []),
    ]
    controller = play(vms, script, seed_exact)
    assert controller.worker_count == 2 and not controller.waiting_for_master
    assert controller.last_command(1) == (10.0, K.INIT) and controller.last_command(3) == (0.0, None)


@MODES
def test_cold_start_with_an_adopted_master_and_no_worker_creates_one_then_sends_the_master_init(seed_exact):
    script = [
        ({}, {1: A.RUNNING}, "master_recovered", [(K.CREATE, 100, "initial_worker"), (K.INIT, 1, "r10_adopt_init")]),
        ({}, {1: A.RUNNING}, "not_measured", []),  # worker 100 booting (last command CREATE: starting)
    ]
    controller = play([(1, MASTER, S.ACTIVE)], script, seed_exact)
    assert controller.worker_count == 1


@MODES
def test_an_adopted_master_that_is_not_running_yet_is_driven_to_running_one_command_a_round(seed_exact):
    vms = [(1, MASTER, S.ACTIVE), (2, WORKER, S.ACTIVE)]
    script = [
        ({}, {1: A.READY}, "waiting_for_master", [(K.INIT, 1, "r10_adopt_init")]),
        ({}, {1: A.INIT}, "waiting_for_master", [(K.INIT, 1, "r6_init_resend")]),
        # found RUNNING after its INIT: its next command is none (rule 7), so the round sends nothing
        ({}, {1: A.RUNNING, 2: A.RUNNING}, "master_recovered", []),
        # 4 master heartbeats and worker 2 RUNNING (adopted: not starting): measured, 20 s, hold; its INIT goes out
        ({}, {1: A.RUNNING, 2: A.RUNNING}, "hold", [(K.INIT, 2, "r10_adopt_init")]),
    ]
    play(vms, script, seed_exact)


@MODES
def test_cold_start_without_vms_creates_a_master_and_waits_for_it(seed_exact):
    script = [
        ({}, {}, "waiting_for_master", []),  # master 100 booting: no time-out yet, no command
        ({100: S.ACTIVE}, {100: A.READY}, "waiting_for_master", [(K.INIT, 100, "r5_created_init")]),
        ({}, {100: A.RUNNING}, "master_recovered", [(K.CREATE, 101, "initial_worker")]),
        ({}, {100: A.RUNNING}, "not_measured", []),
    ]
    cloud = FakeCloud()
    controller = VMController(AutoscalerParams(), cloud, modes=ControllerParams(seed_exact=seed_exact))
    controller.start(0.0)
    assert [(c.kind, c.vm_id, c.rule) for c in controller.start_commands] == [(K.CREATE, 100, "master_create")]
    for number, (changes, beats, action, expected) in enumerate(script, start=1):
        for vm_id, state in changes.items():
            cloud.set(vm_id, state)
        decision, sent = _round(controller, cloud, 10.0 * number, beats)
        assert (number, decision.action, sent) == (number, action, expected)


@MODES
def test_master_crash_and_recovery(seed_exact):
    vms = [(1, MASTER, S.ACTIVE), (2, WORKER, S.ACTIVE), (3, WORKER, S.ACTIVE), (4, WORKER, S.SUSPENDED)]
    running = {1: A.RUNNING, 2: A.RUNNING, 3: A.RUNNING}
    silent_master = {2: A.RUNNING, 3: A.RUNNING}
    script = [
        ({}, running, "master_recovered", [(K.INIT, 1, "r10_adopt_init")]),
        ({}, running, "not_measured", [(K.INIT, 2, "r10_adopt_init"), (K.INIT, 3, "r10_adopt_init")]),
        ({}, running, "hold", []),  # 8 / 4 threads * 5 s = 10 s: not below MIN_AVG_TIME
        ({}, silent_master, "hold", []),  # master's newest heartbeat is 10 s old: not more than DECISION_INTERVAL
        # 20 s old: stale (rule 3). New master first, SUSPEND 2 and 3 (4 is SUSPENDED already), old master last
        (
            {},
            silent_master,
            "master_recovery",
            [
                (K.CREATE, 100, "master_create"),
                (K.SUSPEND, 2, "master_crash_suspend"),
                (K.SUSPEND, 3, "master_crash_suspend"),
                (K.DELETE, 1, "master_crash_delete"),
            ],
        ),
        ({}, {}, "waiting_for_master", []),  # the new master boots
        ({100: S.ACTIVE}, {100: A.READY}, "waiting_for_master", [(K.INIT, 100, "r5_created_init")]),
        ({}, {100: A.INIT}, "waiting_for_master", [(K.INIT, 100, "r6_init_resend")]),
        # found RUNNING: RESUME what the crash suspended (4 was never told to suspend: it stays); the master's own
        # next command after them is none (INIT already sent, RUNNING: rule 7)
        (
            {},
            {100: A.RUNNING},
            "master_recovered",
            [(K.RESUME, 2, "master_recovered_resume"), (K.RESUME, 3, "master_recovered_resume")],
        ),
        # the resumed workers lost their master: ERROR gets INIT (rule 4); both are starting (last RESUME)
        ({}, {100: A.RUNNING, 2: A.ERROR, 3: A.ERROR}, "not_measured", [(K.INIT, 2, "r4_error_init"), (K.INIT, 3, "r4_error_init")]),
    ]
    controller = play(vms, script, seed_exact, reactive=True)
    assert controller.master_id == 100 and controller.worker_count == 3


@MODES
def test_a_failed_master_is_replaced_and_a_booting_worker_is_told_to_suspend_too(seed_exact):
    vms = [(1, MASTER, S.ACTIVE), (2, WORKER, S.ACTIVE), (3, WORKER, S.PENDING)]
    script = [
        ({}, {1: A.RUNNING, 2: A.RUNNING}, "master_recovered", [(K.INIT, 1, "r10_adopt_init")]),
        ({}, {1: A.RUNNING, 2: A.RUNNING}, "not_measured", [(K.INIT, 2, "r10_adopt_init")]),
        (
            {1: S.FAILED},
            {2: A.RUNNING},
            "master_recovery",
            [
                (K.CREATE, 100, "master_create"),
                (K.SUSPEND, 2, "master_crash_suspend"),
                (K.SUSPEND, 3, "master_crash_suspend"),  # still booting: sent all the same
                (K.DELETE, 1, "master_crash_delete"),
            ],
        ),
        ({}, {}, "waiting_for_master", []),
    ]
    controller = play(vms, script, seed_exact)
    assert controller.last_command(3)[1] == K.SUSPEND


@MODES
def test_a_master_that_fails_to_boot_is_replaced_in_the_next_round(seed_exact):
    cloud = FakeCloud()
    controller = VMController(AutoscalerParams(), cloud, modes=ControllerParams(seed_exact=seed_exact))
    controller.start(0.0)
    cloud.set(100, S.FAILED)
    decision, sent = _round(controller, cloud, 10.0, {})
    assert decision.action == "master_recovery" and decision.master_crash_rule == "failed_delete"
    assert sent == [(K.CREATE, 101, "master_create"), (K.DELETE, 100, "master_crash_delete")]
