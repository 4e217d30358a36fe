"""The queue-drain VM autoscaler against a hand-driven fake cloud (``shared/specs/vm-autoscaler.md``)."""

from __future__ import annotations

import math

import pytest
from controller_support import MASTER, WORKER, A, FakeCloud, Harness, K, S, adopted, fresh_worker, kinds, only, settled
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from engine.autoscaling.queue_drain import scale_in_count
from engine.autoscaling.seed_conf import AutoscalerParams
from engine.vmworld.controller import ACTIONS, RULES
from engine.vmworld.controller import VMController as QueueDrainAutoscaler
from engine.vmworld.model import Command, Heartbeat, VMInfo


def test_start_creates_a_master_when_none_exists_and_waits_for_it():
    h = Harness()
    assert h.scaler.start_commands == (Command(K.CREATE, 100, "master_create", MASTER),)
    assert h.scaler.master_id == 100 and h.scaler.waiting_for_master
    assert h.scaler.last_command(100) == (0.0, K.CREATE)
    d = h.step(master=False)  # booting
    assert d.action == "waiting_for_master" and d.commands == ()
    h.cloud.set(100, S.ACTIVE)
    d = h.step({100: A.READY})
    assert d.action == "waiting_for_master" and kinds(d) == [(K.INIT, "r5_created_init")]
    d = h.step({100: A.INIT})
    assert d.action == "waiting_for_master" and kinds(d) == [(K.INIT, "r6_init_resend")]
    d = h.step({100: A.RUNNING})
    assert d.action == "master_recovered" and not h.scaler.waiting_for_master
    assert kinds(d) == [(K.CREATE, "initial_worker")] and h.scaler.worker_count == 1


def test_start_adopts_an_existing_master_and_stamps_every_vm_no_command_yet():
    h = Harness([(5, WORKER, S.ACTIVE), (1, MASTER, S.ACTIVE), (6, WORKER, S.SUSPENDED)])
    assert h.scaler.start_commands == ()
    assert h.scaler.master_id == 1 and h.scaler.waiting_for_master and h.scaler.worker_count == 0
    assert [h.scaler.last_command(i) for i in (1, 5, 6)] == [(0.0, None)] * 3


def test_waiting_for_master_handles_only_the_master():
    h = Harness([(1, MASTER, S.ACTIVE), (2, WORKER, S.ACTIVE), (3, WORKER, S.FAILED)])
    d = h.step({1: A.READY, 2: A.RUNNING})  # master adopted, READY: INIT; the workers are not looked at
    assert d.action == "waiting_for_master" and kinds(d) == [(K.INIT, "r10_adopt_init")]
    d = h.step({1: A.RUNNING, 2: A.RUNNING})  # recovered: recount 2 workers, none resumed, no worker created
    assert d.action == "master_recovered" and d.commands == () and h.scaler.worker_count == 2
    d = h.step({2: A.RUNNING})
    assert kinds(d) == [(K.INIT, "r10_adopt_init"), (K.DELETE, "failed_delete")]
    assert h.scaler.worker_count == 1


def test_master_crash_suspends_the_others_creates_a_new_master_first_and_recovers():
    h = settled(active=2, suspended=1)  # master 1, RUNNING workers 2 and 3, suspended 4
    d = h.step(running=[2, 3], queue=[16, 16, 16])  # 16/4*5 = 20 s
    assert d.action == "hold"
    # a booting worker that never beat (defect 1 of the original); unknown so far: "no command yet"
    h.cloud.vms[50] = VMInfo(50, WORKER, S.PENDING)
    d = h.step(running=[2, 3], master=False)  # no master heartbeat: 10 s old, not stale yet
    assert d.action == "hold" and only(d, 50) is None
    d = h.step(running=[2, 3], master=False)  # 20 s old: stale, the master is replaced
    assert d.action == "master_recovery" and d.master_crash_rule == "r3_stale_heartbeat"
    assert kinds(d) == [
        (K.CREATE, "master_create"),
        (K.SUSPEND, "master_crash_suspend"),
        (K.SUSPEND, "master_crash_suspend"),
        (K.SUSPEND, "master_crash_suspend"),
        (K.DELETE, "master_crash_delete"),
    ]
    assert [c.vm_id for c in d.commands] == [100, 2, 3, 50, 1]
    assert h.scaler.master_id == 100 and h.scaler.waiting_for_master
    assert h.scaler.heartbeats(2) == () and h.scaler.heartbeats(50) == ()
    for i in (2, 3):
        h.cloud.set(i, S.SUSPENDED)
    d = h.step(master=False)
    assert d.action == "waiting_for_master" and d.commands == ()
    h.cloud.set(100, S.ACTIVE)
    h.step({100: A.READY})
    d = h.step({100: A.RUNNING})
    assert d.action == "master_recovered" and not h.scaler.waiting_for_master
    # every VM whose last command is SUSPEND is resumed; 4 was suspended before the controller started
    assert kinds(d) == [(K.RESUME, "master_recovered_resume")] * 3 and [c.vm_id for c in d.commands] == [2, 3, 50]
    assert h.scaler.worker_count == 4


def test_master_recovery_creates_a_worker_when_there_is_none():
    h = Harness([(1, MASTER, S.ACTIVE)])
    h.cloud.set(1, S.FAILED)
    d = h.step(master=False)
    assert d.master_crash_rule == "failed_delete" and [c.vm_id for c in d.commands] == [100, 1]
    h.cloud.set(100, S.ACTIVE)
    h.step({100: A.READY})
    d = h.step({100: A.RUNNING})
    assert kinds(d) == [(K.CREATE, "initial_worker")] and h.cloud.workers() == [101]


def test_a_master_that_left_the_list_is_replaced_without_a_delete():
    h = settled(active=1)
    del h.cloud.vms[1]
    d = h.step(running=[2], master=False)
    assert d.action == "master_recovery" and d.master_crash_rule == "master_vanished"
    assert kinds(d) == [(K.CREATE, "master_create"), (K.SUSPEND, "master_crash_suspend")]


# ---- per-VM rules ----------------------------------------------------------------------------------


def test_pending_timeout_and_then_a_new_worker():
    h = fresh_worker()
    for _ in range(30):  # up to t=310: 300 s since CREATE is not yet "older than"
        assert h.step().commands == ()
    d = h.step()  # t=320
    assert kinds(d) == [(K.DELETE, "pending_timeout")] and h.scaler.worker_count == 0
    d = h.step()
    assert kinds(d) == [(K.CREATE, "no_worker_create")]


def test_failed_vm_is_deleted():
    h = fresh_worker()
    h.cloud.set(100, S.FAILED)
    assert kinds(h.step()) == [(K.DELETE, "failed_delete")]
    assert h.scaler.last_command(100) is None and h.scaler.worker_count == 0


def test_suspended_vm_gets_nothing():
    h = adopted((2, S.SUSPENDED))
    assert h.step().commands == ()


def test_r1_active_without_heartbeat_times_out_like_a_boot():
    h = fresh_worker()
    h.cloud.set(100, S.ACTIVE)
    h.now = 300.0
    assert h.step().commands == ()  # t=310
    assert kinds(h.step()) == [(K.DELETE, "r1_startup_timeout")]


def test_r2_a_heartbeat_after_suspend_is_ignored():
    h = adopted((2, S.ACTIVE))
    h.step({2: A.SHUTTING_DOWN})  # r10: SHUTDOWN
    d = h.step({2: A.READY})
    assert only(d, 2) == (K.SUSPEND, "r9_suspend_drained")
    # still ACTIVE while suspending, and a late datagram shows up: old, but no DELETE
    d = h.step({2: Heartbeat(h.now - 5, A.RUNNING)}, dt=30)
    assert only(d, 2) is None and len(h.scaler.heartbeats(2)) == 1


def test_r3_stale_heartbeat_is_deleted_after_more_than_one_interval():
    h = adopted((2, S.ACTIVE))
    h.step(running=[2])
    assert only(h.step(), 2) is None  # newest heartbeat 10 s old: not more than DECISION_INTERVAL
    assert only(h.step(), 2) == (K.DELETE, "r3_stale_heartbeat")


def test_r4_error_gets_init_until_the_first_init_is_too_old():
    h = fresh_worker()
    h.cloud.set(100, S.ACTIVE)
    assert only(h.step({100: A.ERROR}), 100) == (K.INIT, "r4_error_init")  # last CREATE: INIT, t=20
    for _ in range(6):  # re-sent INITs keep t=20 as the time of the INIT
        assert only(h.step({100: A.ERROR}), 100) == (K.INIT, "r4_error_init")
    assert h.scaler.last_command(100) == (20.0, K.INIT)
    assert only(h.step({100: A.ERROR}), 100) == (K.DELETE, "r4_error_timeout")  # t=90


def test_r4_a_long_running_worker_that_errors_is_deleted_at_once():
    h = settled(active=1)
    h.now += 100
    assert only(h.step({2: A.ERROR}), 2) == (K.DELETE, "r4_error_timeout")


def test_r5_created_and_ready_gets_init():
    h = fresh_worker()
    h.cloud.set(100, S.ACTIVE)
    assert only(h.step({100: A.READY}), 100) == (K.INIT, "r5_created_init")
    assert h.scaler.last_command(100) == (20.0, K.INIT)


def test_r6_resending_init_does_not_reset_its_time():
    h = fresh_worker()
    h.cloud.set(100, S.ACTIVE)
    h.step({100: A.READY})  # INIT first sent at t=20
    for state in [A.READY, A.INIT] * 3:  # t=30..80: at most 60 s since the first INIT
        assert only(h.step({100: state}), 100) == (K.INIT, "r6_init_resend")
    assert h.scaler.last_command(100) == (20.0, K.INIT)
    assert only(h.step({100: A.INIT}), 100) == (K.DELETE, "r6_transition_timeout")  # t=90


def test_r7_running_after_init_gets_nothing_and_reports_a_load():
    h = fresh_worker()
    h.cloud.set(100, S.ACTIVE)
    h.step({100: A.READY})
    d = h.step({100: h.beat(A.RUNNING, cpu=0.5, mem=0.9)})
    assert only(d, 100) is None and d.load is None  # fewer than MIN_MEASURE_LOAD_HB heartbeats
    d = h.step({100: [h.beat(A.RUNNING, cpu=0.5, mem=0.9)] * 2})
    assert d.load == 0.9  # memory above MAX_AVG_LOAD: the max of the three
    d = h.step({100: h.beat(A.RUNNING, cpu=0.5, mem=0.3, disk=0.7)})
    assert d.load == 0.5  # cpu alone
    d = h.step({100: h.beat(A.RUNNING, cpu=0.2, mem=0.3, disk=1.5)})
    assert d.load == 1.5


def test_r8_shutdown_is_resent_until_it_is_too_old():
    h = adopted((2, S.ACTIVE))
    assert only(h.step({2: A.SHUTTING_DOWN}), 2) == (K.SHUTDOWN, "r10_adopt_shutdown")  # t=20
    for state in [A.SHUTTING_DOWN, A.RUNNING] * 15:  # t=30..320: at most 300 s
        assert only(h.step({2: state}), 2) == (K.SHUTDOWN, "r8_shutdown_resend")
    assert h.scaler.last_command(2) == (20.0, K.SHUTDOWN)
    assert only(h.step({2: A.RUNNING}), 2) == (K.DELETE, "r8_shutdown_timeout")


def test_r9_drained_worker_is_suspended_and_its_heartbeats_dropped():
    h = adopted((2, S.ACTIVE))
    h.step({2: A.SHUTTING_DOWN})
    assert len(h.scaler.heartbeats(2)) == 1
    assert only(h.step({2: A.READY}), 2) == (K.SUSPEND, "r9_suspend_drained")
    assert h.scaler.heartbeats(2) == () and h.scaler.last_command(2) == (30.0, K.SUSPEND)


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (A.RUNNING, (K.INIT, "r10_adopt_init")),
        (A.READY, (K.INIT, "r10_adopt_init")),
        (A.INIT, (K.INIT, "r10_adopt_init")),
        (A.SHUTTING_DOWN, (K.SHUTDOWN, "r10_adopt_shutdown")),
        (A.ERROR, (K.INIT, "r4_error_init")),
    ],
)
def test_r10_adopted_worker_follows_its_heartbeat(state, expected):
    h = adopted((2, S.ACTIVE))
    assert only(h.step({2: state}), 2) == expected


def test_r10_resumed_worker_gets_init():
    h = settled(active=1, suspended=1)  # worker 3 suspended
    d = h.step(running=[2], queue=[13, 13, 13])  # 13/2*5 = 32.5 s; ceil(32.5/25*1 - 1) = 1: resume 3
    assert only(d, 3) == (K.RESUME, "scale_out_resume")
    h.cloud.set(3, S.ACTIVE)
    assert only(h.step({3: A.RUNNING}, running=[2]), 3) == (K.INIT, "r10_adopt_init")


@pytest.mark.parametrize(("state"), [A.RUNNING, A.INIT, A.SHUTTING_DOWN])
def test_r11_illegal_state_is_deleted(state):
    h = fresh_worker()
    h.cloud.set(100, S.ACTIVE)
    d = h.step({100: state})  # running or draining before it was ever sent INIT
    assert only(d, 100) == (K.DELETE, "r11_illegal_state") and h.scaler.worker_count == 0


def test_r11_shutdown_then_init_state_is_illegal():
    h = adopted((2, S.ACTIVE))
    h.step({2: A.SHUTTING_DOWN})
    assert only(h.step({2: A.INIT}), 2) == (K.DELETE, "r11_illegal_state")


# ---- scaling -------------------------------------------------------------------------------------
# The worked numbers: band [10, 30]; 4 active workers with 2 threads each (8 threads) and 5 s per task.
# time_left = mean(master queue over the last 3 heartbeats) / 8 * 5.


def test_hold_inside_the_band():
    h = settled()
    d = h.step(running=h.active_ids, queue=[30, 32, 34])  # 32/8*5 = 20 s
    assert d.action == "hold" and d.commands == ()
    assert (d.time_left, d.avg_queue, d.avg_time, d.threads, d.active) == (20.0, 32.0, 5.0, 8, 4)
    assert (d.band_low, d.band_high) == (10.0, 30.0)


def test_scale_in_shuts_down_the_last_active_workers():
    # queue 8 -> time_left 8/8*5 = 5 < 10; target 10 + 20/4 = 15; floor((1 - 1/(15/5)) * 4) = floor(2.67) = 2
    h = settled()
    d = h.step(running=h.active_ids, queue=[8, 8, 8])
    assert d.action == "scale_in" and d.time_left == 5.0
    assert [(c.vm_id, c.kind, c.rule) for c in d.commands] == [(4, K.SHUTDOWN, "scale_in_shutdown"), (5, K.SHUTDOWN, "scale_in_shutdown")]
    # they drain, report READY, and are suspended (rule 9)
    d = h.step({4: A.READY, 5: A.SHUTTING_DOWN}, running=[2, 3], queue=[20, 20, 20])  # 20/4*5 = 25: hold
    assert d.action == "hold" and kinds(d) == [(K.SUSPEND, "r9_suspend_drained"), (K.SHUTDOWN, "r8_shutdown_resend")]


def test_scale_in_with_an_empty_queue_keeps_one_worker():
    h = settled()
    d = h.step(running=h.active_ids, queue=[0, 0, 0])
    assert d.action == "scale_in" and d.time_left == 0.0
    assert [c.vm_id for c in d.commands] == [3, 4, 5]


def test_scale_in_uses_the_original_expression_at_a_boundary():
    # band [1, 3]: target 1.5; 5 workers, 1 thread, 0.5 s per task, queue 9: time_left 9/5*0.5 = 0.9.
    # (1 - 0.9/1.5) * 5 is 2.0, but the original's (1 - 1/(1.5/0.9)) * 5 is 1.9999999999999996: 1 worker.
    assert scale_in_count(0.9, 5, 1.0, 3.0) == 1
    assert math.floor((1 - 0.9 / 1.5) * 5) == 2
    h = settled(active=5, threads=1, avg_time=0.5, MIN_AVG_TIME=1.0, MAX_AVG_TIME=3.0)
    d = h.step(running=h.active_ids, queue=[9, 9, 9])
    assert d.time_left == 0.9 and [c.vm_id for c in d.commands] == [6]


def test_scale_out_resumes_suspended_first_then_creates_but_sends_creates_first():
    # queue 100 -> time_left 100/8*5 = 62.5 > 30; target 30 - 20/4 = 25; ceil(62.5/25*4 - 4) = 6:
    # resume the 2 suspended workers (6, 7), create 4.
    h = settled(suspended=2)
    d = h.step(running=h.active_ids, queue=[90, 100, 110])
    assert d.action == "scale_out" and d.time_left == 62.5 and d.suspended == 2
    assert kinds(d) == [(K.CREATE, "scale_out_create")] * 4 + [(K.RESUME, "scale_out_resume")] * 2
    assert [c.vm_id for c in d.commands] == [100, 101, 102, 103, 6, 7]
    assert all(c.vm_type == WORKER for c in d.commands[:4]) and h.scaler.worker_count == 10


def test_scale_out_resumes_from_the_start_of_the_suspended_list():
    # queue 48 -> 30 s... just above: 49/8*5 = 30.625; ceil(30.625/25*4 - 4) = ceil(0.9) = 1: resume 6 only
    h = settled(suspended=2)
    d = h.step(running=h.active_ids, queue=[49, 49, 49])
    assert [(c.vm_id, c.kind) for c in d.commands] == [(6, K.RESUME)]


def test_scale_out_stops_at_max_workers():
    h = settled(suspended=2, MAX_WORKERS=8)  # 6 workers exist: resume 2, create only 2 of the 4 wanted
    d = h.step(running=h.active_ids, queue=[100, 100, 100])
    assert kinds(d) == [(K.CREATE, "scale_out_create")] * 2 + [(K.RESUME, "scale_out_resume")] * 2
    assert h.scaler.worker_count == 8 == len(h.cloud.workers())


def test_no_scaling_while_a_worker_is_starting():
    h = settled(suspended=1)
    d = h.step(running=h.active_ids, queue=[49, 49, 49])  # 30.625 s: resume 6
    assert kinds(d) == [(K.RESUME, "scale_out_resume")]
    # 6 still SUSPENDED (resuming), last command RESUME: starting, so no scaling on any queue
    d = h.step(running=h.active_ids, queue=[400, 400, 400])
    assert d.action == "not_measured" and d.starting == 1 and d.time_left is None and d.commands == ()


def test_a_created_worker_is_starting_too():
    h = settled()
    h.step(running=h.active_ids, queue=[100, 100, 100])
    d = h.step(running=h.active_ids, queue=[100, 100, 100])
    assert d.action == "not_measured" and d.starting == 6 and d.commands == ()


def test_no_scaling_with_too_few_master_heartbeats():
    h = settled(MIN_MEASURE_LOAD_HB=5)
    d = h.step(running=h.active_ids, queue=[100])  # the master has 3 heartbeats
    assert d.action == "not_measured" and d.commands == ()
    d = h.step(running=h.active_ids, queue=[100, 100])  # 5
    assert d.action == "scale_out"


def test_no_scaling_without_an_active_worker():
    h = settled(active=1)
    d = h.step({2: A.SHUTTING_DOWN}, queue=[100, 100, 100])  # not RUNNING: not active; last INIT: illegal
    assert d.action == "not_measured" and d.active == 0


def test_heartbeats_are_trimmed_and_unknown_ids_ignored():
    h = adopted((2, S.ACTIVE), MAX_HB_HISTORY=4)
    h.step({999: A.RUNNING}, queue=[1, 2, 3, 4, 5, 6])
    assert [b.queue_length for b in h.scaler.heartbeats(1)] == [3, 4, 5, 6]
    assert h.scaler.heartbeats(999) == ()
    h.step({2: []}, queue=[7])  # an empty delivery creates no buffer
    assert h.scaler.heartbeats(2) == () and [b.queue_length for b in h.scaler.heartbeats(1)] == [4, 5, 6, 7]


def test_the_queue_is_averaged_over_the_last_heartbeats_only():
    h = settled()
    d = h.step(running=h.active_ids, queue=[1000, 16, 32, 48])  # mean of 16, 32, 48: 32
    assert d.avg_queue == 32.0 and d.action == "hold"


def test_a_param_change_takes_effect_at_the_next_decision():
    h = settled()
    assert h.step(running=h.active_ids, queue=[32, 32, 32]).action == "hold"  # 20 s
    h.params.MAX_AVG_TIME = 15.0
    d = h.step(running=h.active_ids, queue=[32, 32, 32])
    assert d.action == "scale_out" and d.band_high == 15.0
    h2 = fresh_worker()
    h2.params.MAX_STARTUP_TIME = 25.0
    assert h2.step().commands == () and h2.step().commands == ()  # t=20, 30: 10 and 20 s since CREATE
    assert kinds(h2.step()) == [(K.DELETE, "pending_timeout")]  # t=40: 30 > 25


# ---- accounting ----------------------------------------------------------------------------------


def test_vm_seconds_across_suspend_resume_and_delete():
    h = adopted((2, S.ACTIVE), (3, S.SUSPENDED))  # accounts of 1 and 2 open at 0; 3 is suspended
    assert h.scaler.vm_seconds(10.0) == 20.0
    h.step({2: A.SHUTTING_DOWN})  # t=20
    h.step({2: A.READY})  # t=30: SUSPEND closes 2 after 30 s
    assert h.scaler.vm_seconds(30.0) == 60.0
    h.cloud.set(2, S.SUSPENDED)
    h.cloud.set(1, S.FAILED)  # t=40: master crash: the new master 100 opens at 40, 1 closes at 40
    d = h.step(master=False)
    assert [c.vm_id for c in d.commands] == [100, 1]
    assert h.scaler.vm_seconds(40.0) == 30.0 + 40.0
    h.cloud.set(100, S.ACTIVE)
    h.step({100: A.READY})  # t=50
    d = h.step({100: A.RUNNING})  # t=60: 2 resumed (its last command was SUSPEND), opens at 60
    assert kinds(d) == [(K.RESUME, "master_recovered_resume")]
    assert h.scaler.vm_seconds(60.0) == 70.0 + 20.0
    h.cloud.set(2, S.FAILED)
    h.step()  # t=70: 2 deleted after 10 s
    assert h.scaler.vm_seconds(70.0) == 70.0 + 30.0 + 10.0
    assert h.scaler.vm_seconds(80.0) == 110.0 + 10.0


# ---- defects of the original ---------------------------------------------------------------------


def test_defect_master_crash_with_a_vm_that_never_beat():
    h = fresh_worker()  # worker 100 PENDING, never beat
    h.cloud.set(1, S.FAILED)
    d = h.step(master=False)
    assert kinds(d, 100) == [(K.SUSPEND, "master_crash_suspend")] and h.scaler.heartbeats(100) == ()


def test_defect_failed_after_suspend_closes_the_account_once():
    h = adopted((2, S.ACTIVE))
    h.step({2: A.SHUTTING_DOWN})
    h.step({2: A.READY})  # t=30: suspended
    h.cloud.set(2, S.SUSPENDED)
    h.cloud.set(2, S.FAILED)
    d = h.step()
    assert only(d, 2) == (K.DELETE, "failed_delete")
    assert h.scaler.vm_seconds(40.0) == 40.0 + 30.0  # the master's 40 s and the worker's 30 s, once


def test_defect_zero_threads_with_a_queue_scales_out_to_the_limit():
    h = settled(active=2, suspended=1, threads=0, MAX_WORKERS=5)
    d = h.step(running=h.active_ids, queue=[3, 3, 3])
    assert d.action == "scale_out" and d.time_left == math.inf and d.threads == 0
    assert kinds(d) == [(K.CREATE, "scale_out_create")] * 2 + [(K.RESUME, "scale_out_resume")]
    assert len(h.cloud.workers()) == 5


def test_defect_zero_threads_with_an_empty_queue_scales_in_to_one():
    h = settled(active=3, threads=0)
    d = h.step(running=h.active_ids, queue=[0, 0, 0])
    assert d.action == "scale_in" and d.time_left == 0.0 and [c.vm_id for c in d.commands] == [3, 4]


def test_step_before_start_is_an_error():
    scaler = QueueDrainAutoscaler(AutoscalerParams(), FakeCloud())
    with pytest.raises(RuntimeError):
        scaler.step(0.0, {})


# ---- property ------------------------------------------------------------------------------------

# biased towards a healthy cluster (booting, RUNNING, fresh heartbeats) so that scaling happens too
VM_EVENTS = st.sampled_from(["none"] * 8 + ["boot"] * 3 + ["fail"])
APP_STATES = st.sampled_from([A.RUNNING] * 8 + [A.READY, A.READY, A.INIT, A.SHUTTING_DOWN, A.ERROR])
BEATS = st.one_of(
    st.none(),
    st.tuples(APP_STATES, st.integers(0, 300), st.integers(0, 4), st.floats(0.0, 20.0), st.sampled_from([0.0] * 6 + [15.0])),
    st.tuples(APP_STATES, st.integers(0, 300), st.integers(0, 4), st.floats(0.0, 20.0), st.just(0.0)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), max_workers=st.integers(1, 6), rounds=st.integers(1, 40), start_workers=st.integers(0, 3))
def test_property_workers_never_exceed_max_workers(data, max_workers, rounds, start_workers):
    vms = [(1, MASTER, S.ACTIVE)] + [(2 + i, WORKER, S.ACTIVE) for i in range(min(start_workers, max_workers))]
    cloud = FakeCloud(vms, reactive=True)
    params = AutoscalerParams(MAX_WORKERS=max_workers, MIN_MEASURE_LOAD_HB=1, MAX_HB_HISTORY=3)
    scaler = QueueDrainAutoscaler(params, cloud)
    scaler.start(0.0)
    now, used, recovered = 0.0, 0.0, False
    for _ in range(rounds):
        now += 10.0
        beats: dict[int, list[Heartbeat]] = {}
        for vm in cloud.list_vms():
            change = data.draw(VM_EVENTS)
            if change == "boot" and vm.state == S.PENDING:
                cloud.set(vm.id, S.ACTIVE)
            elif change == "fail":
                cloud.set(vm.id, S.FAILED)
            beat = data.draw(BEATS)
            if beat is not None and cloud.vms[vm.id].state == S.ACTIVE:
                state, q, th, t, age = beat
                beats[vm.id] = [Heartbeat(now - age, state, queue_length=q, threads=th, avg_time=t)]
        beats[12345] = [Heartbeat(now, A.RUNNING)]
        before = len(cloud.sent)
        d = scaler.step(now, beats)
        assert list(d.commands) == cloud.sent[before:]
        assert d.action in ACTIONS and all(c.rule in RULES for c in d.commands)
        event(d.action)
        assert len(cloud.workers()) <= max_workers
        recovered = recovered or not scaler.waiting_for_master
        if recovered:  # the count starts at 0 and is recounted when the master is first found RUNNING
            assert scaler.worker_count == len(cloud.workers())
        masters = [v for v in cloud.list_vms() if v.type == MASTER]
        assert scaler.master_id in {v.id for v in masters}
        seconds = scaler.vm_seconds(now)
        assert seconds >= used
        used = seconds
