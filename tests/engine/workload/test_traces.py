"""Trace replay: the importers on the real samples, the trace pattern's arrivals and service times,
bad files, and the azure-trace scenario."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.core.params import ParamError, apply_checked, coerce
from engine.sim.scenario import Scenario, ScenarioError, load_scenario
from engine.sim.simulation import Simulation
from engine.vmworld.jobs import JobFlow, WorkerSlot
from engine.workload.arrivals import WINDOW, ArrivalStream
from engine.workload.params import WorkloadParams
from engine.workload.service import ServiceTimes
from engine.workload.traces import azure2019, azure2021, common, openb, replay

A19 = "azure-functions-2019/invocations.csv"
A21 = "azure-functions-2021/Azure2021_200.csv"
OPENB = "alibaba-openb/openb_pod_list_default.csv"
F3 = "e72c1540"  # HashFunction of row 3 of the 2019 sample: busy, falls silent at the end of the day
MINUTES = [str(i) for i in range(1, 1441)]


def _csv(name: str) -> pd.DataFrame:
    return pd.read_csv(common.TRACE_DIR / name)


def _params(**kw) -> WorkloadParams:
    base = {"pattern": "trace", "rate": 1.0, "trace_file": A19, "trace_format": "azure2019"}
    wp = WorkloadParams(**{**base, **kw})
    wp.check()
    return wp


def _generate(wp: WorkloadParams, seed: int, windows: int) -> np.ndarray:
    stream = ArrivalStream(wp, np.random.default_rng(seed))
    out: list[float] = []
    for _ in range(windows):
        out.extend(stream.next_window())
    return np.asarray(out)


# -- importers on the real samples ---------------------------------------------------------------


def test_azure2019_counts_match_the_csv():
    df = _csv(A19)
    all_rows = azure2019.read_azure2019_invocations(A19)
    assert all_rows.minutes == 1440
    assert all_rows.functions == tuple(df["HashFunction"])
    np.testing.assert_array_equal(all_rows.per_function, df[MINUTES].to_numpy())
    np.testing.assert_array_equal(all_rows.counts, df[MINUTES].sum(axis=0).to_numpy())
    assert all_rows.total == int(df[MINUTES].to_numpy().sum()) == 13037064

    one = azure2019.read_azure2019_invocations(A19, F3)
    assert one.rows == (3,) and one.total == int(df.loc[3, MINUTES].sum()) == 575863
    by_index = azure2019.read_azure2019_invocations(A19, "#3")
    np.testing.assert_array_equal(by_index.counts, one.counts)
    assert azure2019.read_azure2019_invocations(A19, "row3").rows == (3,)  # the YAML-friendly spelling
    pair = azure2019.read_azure2019_invocations(A19, f"#8, {F3.upper()}")  # commas sum; prefixes ignore case
    assert pair.rows == (3, 8)
    np.testing.assert_array_equal(pair.counts, df.loc[[3, 8], MINUTES].sum(axis=0).to_numpy())

    trace = replay.load_trace(A19, "azure2019", F3)
    assert trace.total == 575863 and trace.span == 86400.0 and trace.bin_seconds == 60.0
    assert not trace.counts.flags.writeable


def test_azure2019_columns_are_read_by_name_whatever_their_order(tmp_path: Path):
    df = _csv(A19)
    shuffled = df[list(reversed(df.columns))]
    path = tmp_path / "invocations.csv"
    shuffled.to_csv(path, index=False)
    np.testing.assert_array_equal(azure2019.read_azure2019_invocations(path).per_function, df[MINUTES].to_numpy())


def test_azure2019_durations_from_the_percentile_table():
    df = _csv("azure-functions-2019/durations.csv").set_index("HashFunction")
    d = replay.load_durations(A19, "azure2019", F3)
    row = df.loc[azure2019.read_azure2019_invocations(A19, F3).functions[0]]
    expected = np.array([row[f"percentile_Average_{q}"] for q in (0, 1, 25, 50, 75, 99, 100)]) / 1000.0
    np.testing.assert_allclose(d.table[0], expected)
    draws = d.sample(np.random.default_rng(5), 200_000)
    # the empirical quantiles of the draws are the table's (piecewise-linear inverse CDF)
    np.testing.assert_allclose(np.quantile(draws, [0.25, 0.5, 0.75]), expected[2:5], rtol=0.03)
    assert np.mean(draws <= expected[5]) == pytest.approx(0.99, abs=0.002)  # p99, below a steep tail
    assert draws.min() >= common.MIN_SERVICE and draws.max() <= expected[-1]
    assert abs(draws.mean() - d.mean()) < 0.02 * d.mean()
    np.testing.assert_array_equal(draws, d.sample(np.random.default_rng(5), 200_000))  # seeded

    mix = replay.load_durations(A19, "azure2019", "")  # every function, weighted by its invocations
    totals = _csv(A19)[MINUTES].sum(axis=1).to_numpy()
    np.testing.assert_allclose(mix.weights, totals / totals.sum())


def test_azure2021_arrivals_are_end_minus_duration_sorted():
    df = _csv(A21)
    inv = azure2021.read_azure2021(A21)
    start = (df["end_timestamp"] - df["duration"]).to_numpy()
    order = np.argsort(start, kind="stable")
    np.testing.assert_allclose(inv.start, start[order])
    np.testing.assert_allclose(inv.duration, df["duration"].to_numpy()[order])
    assert inv.total == len(df) and np.all(np.diff(inv.start) >= 0)
    trace = replay.load_trace(A21, "azure2021")
    np.testing.assert_allclose(trace.times, start[order] - start[order][0])  # first arrival at 0
    assert trace.times[0] == 0.0 and trace.origin == pytest.approx(start.min())
    assert trace.span > trace.times[-1]

    some = azure2021.read_azure2021(A21, df["func"][1][:10])
    assert some.total == int((df["func"] == df["func"][1]).sum()) and set(some.func) == {df["func"][1]}
    dur = replay.load_durations(A21, "azure2021")
    assert set(dur.sample(np.random.default_rng(1), 1000)) <= set(np.maximum(df["duration"], common.MIN_SERVICE))


def test_openb_pod_arrivals_are_creation_times():
    df = _csv(OPENB)
    pods = openb.read_openb_pods(OPENB)
    np.testing.assert_array_equal(pods.creation_time, np.sort(df["creation_time"].to_numpy()))
    assert pods.total == 8152
    ls = openb.read_openb_pods(OPENB, "LS")
    assert ls.total == int((df["qos"] == "LS").sum()) and set(ls.qos) == {"LS"}
    trace = replay.load_trace(OPENB, "openb")
    assert trace.total == 8152 and trace.times[0] == 0.0


def test_unsorted_times_are_sorted_with_a_note(tmp_path: Path):
    df = _csv(A21).sample(frac=1.0, random_state=3)  # shuffled rows
    path = tmp_path / "shuffled.csv"
    df.to_csv(path, index=False)
    inv = azure2021.read_azure2021(path)
    assert np.all(np.diff(inv.start) >= 0)
    assert len(inv.notes) == 1 and "sorted" in inv.notes[0] and str(path) in inv.notes[0]
    np.testing.assert_allclose(inv.start, azure2021.read_azure2021(A21).start)


# -- bad input ------------------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_bad_files_name_the_file_and_the_field(tmp_path: Path):
    df21 = _csv(A21)
    no_duration = tmp_path / "no_duration.csv"
    df21.drop(columns="duration").to_csv(no_duration, index=False)
    with pytest.raises(common.TraceError, match=r"no_duration\.csv: column 'duration': missing") as e:
        azure2021.read_azure2021(no_duration)
    assert e.value.field == "workload.trace_file" and isinstance(e.value, ParamError)

    negative = df21.copy()
    negative.loc[4, "duration"] = -2.5
    path = tmp_path / "negative.csv"
    negative.to_csv(path, index=False)
    with pytest.raises(ParamError, match=r"negative\.csv: line 6, column 'duration': -2\.5 is negative; allowed: numbers >= 0"):
        azure2021.read_azure2021(path)

    df19 = _csv(A19)
    bad_count = df19.astype({"17": object})
    bad_count.loc[2, "17"] = "lots"
    path = tmp_path / "bad_count.csv"
    bad_count.to_csv(path, index=False)
    with pytest.raises(ParamError, match=r"bad_count\.csv: line 4, column '17': 'lots' is not a count; allowed: integers >= 0"):
        azure2019.read_azure2019_invocations(path)
    path = tmp_path / "gap.csv"
    df19.drop(columns="17").to_csv(path, index=False)
    with pytest.raises(ParamError, match=r"gap\.csv: column '17': missing"):
        azure2019.read_azure2019_invocations(path)
    path = tmp_path / "no_hash.csv"
    df19.drop(columns="HashFunction").to_csv(path, index=False)
    with pytest.raises(ParamError, match=r"no_hash\.csv: column 'HashFunction': missing"):
        azure2019.read_azure2019_invocations(path)

    with pytest.raises(ParamError, match=r"empty\.csv: the file is empty"):
        openb.read_openb_pods(_write(tmp_path, "empty.csv", ""))
    with pytest.raises(ParamError, match=r"header\.csv: empty trace: the file has a header but no rows"):
        azure2021.read_azure2021(_write(tmp_path, "header.csv", "app,func,end_timestamp,duration\n"))
    zeros = df19.iloc[[0]].copy()
    zeros[MINUTES] = 0
    path = tmp_path / "zeros.csv"
    zeros.to_csv(path, index=False)
    with pytest.raises(ParamError, match=r"zeros\.csv: empty trace: no invocations"):
        replay.load_trace(path, "azure2019")
    with pytest.raises(ParamError, match=r"missing\.csv: no such file"):
        azure2021.read_azure2021(tmp_path / "missing.csv")
    with pytest.raises(ParamError, match=r"^workload\.trace_function: .*'zzz': matches no 'HashFunction'"):
        azure2019.read_azure2019_invocations(A19, "zzz")
    with pytest.raises(ParamError, match=r"^workload\.trace_function: .*'#10': no such row; allowed: #0\.\.#9"):
        azure2019.read_azure2019_invocations(A19, "#10")


def test_bad_durations_file_names_it(tmp_path: Path):
    folder = tmp_path / "a19"
    folder.mkdir()
    _csv(A19).to_csv(folder / "invocations.csv", index=False)
    durations = _csv("azure-functions-2019/durations.csv")
    durations.loc[1, "percentile_Average_50"] = -1
    durations.to_csv(folder / "durations.csv", index=False)
    with pytest.raises(
        ParamError, match=r"^workload\.trace_service: .*durations\.csv: line 3, column 'percentile_Average_50': -1 is negative"
    ):
        replay.load_durations(folder / "invocations.csv", "azure2019", "")
    durations.drop(index=1).to_csv(folder / "durations.csv", index=False)
    with pytest.raises(ParamError, match=r"durations\.csv: column 'HashFunction': no row for function"):
        replay.load_durations(folder / "invocations.csv", "azure2019", "#1")
    replay.load_durations(folder / "invocations.csv", "azure2019", "#2")  # the functions it lists are fine


def test_file_check_validates_the_trace_combination_and_params_read_no_file(tmp_path: Path):
    WorkloadParams(pattern="trace", trace_file="nope.csv").check()  # params do no I/O: the file check does
    with pytest.raises(ParamError, match=r"^workload\.trace_file: the trace pattern needs a trace file"):
        replay.check_files(WorkloadParams(pattern="trace"))
    with pytest.raises(ParamError, match=r"^workload\.trace_file: .*nope\.csv: no such file"):
        replay.check_files(WorkloadParams(pattern="trace", trace_file="nope.csv"))
    with pytest.raises(ParamError, match=r"^workload\.trace_service: the openb pod list has no service durations"):
        replay.check_files(WorkloadParams(pattern="trace", trace_file=OPENB, trace_format="openb", trace_service=True))
    with pytest.raises(ParamError, match=r"^workload\.trace_file: trace_service needs a trace file"):
        replay.check_files(WorkloadParams(pattern="poisson", trace_service=True))
    with pytest.raises(ParamError, match=r"^workload\.trace_file: 5 is not allowed; allowed: a string"):
        coerce(WorkloadParams(), "trace_file", 5)
    with pytest.raises(ParamError, match=r"^workload\.trace_speedup: 0\.0 is out of range"):
        coerce(WorkloadParams(), "trace_speedup", 0)
    replay.check_files(WorkloadParams(pattern="poisson", trace_file="ignored-unless-used.csv"))
    replay.check_files(WorkloadParams(pattern="trace", trace_file=str(common.TRACE_DIR / A21), trace_format="azure2021"))  # absolute path

    bad = tmp_path / "bad.csv"
    bad.write_text("app,func,end_timestamp\na,b,1.0\n")
    with pytest.raises(ScenarioError, match=r"scen\.yaml: workload\.trace_file: .*bad\.csv: column 'duration': missing"):
        Scenario.from_dict({"workload": {"pattern": "trace", "trace_file": str(bad), "trace_format": "azure2021"}}, origin="scen.yaml")

    sim = Simulation(Scenario.from_dict({"run": {"duration": 60}}))
    before = sim.sections["workload"].values()
    with pytest.raises(ParamError, match="bad.csv"):
        sim.set_params({"workload.pattern": "trace", "workload.trace_file": str(bad), "workload.trace_format": "azure2021"})
    assert sim.sections["workload"].values() == before  # nothing changed


# -- the trace pattern ------------------------------------------------------------------------------------


def test_minute_counts_replay_exactly_per_minute_at_speedup_1():
    counts = replay.load_trace(A19, "azure2019", "#4").counts  # zero for hours, then ~35 a minute
    wp = _params(trace_function="#4", trace_speedup=1.0)
    times = _generate(wp, seed=3, windows=1440 * 6)
    assert np.all(np.diff(times) >= 0) and times.min() >= 0 and times.max() < 86400
    np.testing.assert_array_equal(np.histogram(times, bins=np.arange(1441) * 60.0)[0], counts)
    assert not np.array_equal(times, _generate(wp, seed=4, windows=1440 * 6))  # spread by the seed
    np.testing.assert_array_equal(times, _generate(wp, seed=3, windows=1440 * 6))


@pytest.mark.parametrize("speedup", [0.37, 7.0, 12.0, 1000.0])
def test_minutes_split_over_windows_keep_their_totals(speedup: float):
    trace = replay.load_trace(A19, "azure2019", "#7")
    cursor = replay.TraceCursor(trace)
    rng = np.random.default_rng(0)
    pos = []
    while cursor.pos < trace.span:
        pos.append(cursor.take(WINDOW * speedup, False, 1.0, rng))
    pos = np.concatenate(pos)
    np.testing.assert_array_equal(np.histogram(pos, bins=np.arange(1441) * 60.0)[0], trace.counts)


def _sim_arrivals(scenario: Scenario, chunks: list[float], seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    sim = Simulation(scenario, seed=seed)
    for t in chunks:
        sim.advance(t)
    return sim.samples(), sim.jobs_frame()


@pytest.mark.parametrize(
    "workload",
    [
        {"trace_file": A19, "trace_format": "azure2019", "trace_function": "#3", "trace_speedup": 7.0, "rate": 1.5, "trace_service": True},
        {"trace_file": A21, "trace_format": "azure2021", "trace_speedup": 3.0, "rate": 0.7, "trace_loop": True, "trace_service": True},
        {"trace_file": OPENB, "trace_format": "openb", "trace_speedup": 20000.0},
    ],
    ids=["azure2019", "azure2021", "openb"],
)
def test_arrivals_do_not_depend_on_how_advance_is_chunked(workload: dict):
    scenario = Scenario.from_dict(
        {"run": {"duration": 600, "record_jobs": True}, "autoscaler": {"MAX_WORKERS": 5}, "workload": {"pattern": "trace", **workload}}
    )
    one_go = _sim_arrivals(scenario, [600.0])
    rng = np.random.default_rng(9)
    chunked = _sim_arrivals(scenario, sorted(rng.uniform(0, 600, 40).tolist()) + [600.0])
    pd.testing.assert_frame_equal(one_go[0], chunked[0])
    pd.testing.assert_frame_equal(one_go[1], chunked[1])
    assert one_go[0]["arrivals"].sum() > 0


def test_per_invocation_traces_replay_exact_times_scaled_by_speedup():
    trace = replay.load_trace(A21, "azure2021")
    times = _generate(_params(trace_file=A21, trace_format="azure2021", trace_speedup=2.0), seed=1, windows=100)
    np.testing.assert_allclose(times, trace.times / 2.0, atol=1e-9)  # no draw: the recorded times
    assert len(times) == trace.total  # 1000 s of simulation hold the 2412 s trace; then it stops
    looped = _generate(_params(trace_file=A21, trace_format="azure2021", trace_speedup=2.0, trace_loop=True), seed=1, windows=302)
    passes = [trace.times + k * trace.span for k in range(6)]  # 3020 s simulated: 6040 trace s, 5 passes and a bit
    expected = np.concatenate(passes)
    np.testing.assert_allclose(looped, expected[expected < 6040.0] / 2.0, atol=1e-9)
    assert 5 * trace.total < len(looped) < 6 * trace.total


def test_rate_multiplies_the_traces_intensity():
    total = replay.load_trace(A19, "azure2019", "#7").total
    windows = 720  # speedup 12: the whole day
    assert len(_generate(_params(trace_function="#7", trace_speedup=12.0, rate=2.0), 1, windows)) == 2 * total
    assert len(_generate(_params(trace_function="#7", trace_speedup=12.0, rate=0.0), 1, windows)) == 0
    half = len(_generate(_params(trace_function="#7", trace_speedup=12.0, rate=0.5), 1, windows))
    assert abs(half - total / 2) < 4 * np.sqrt(total / 4)
    a21 = replay.load_trace(A21, "azure2021").total
    thinned = _generate(_params(trace_file=A21, trace_format="azure2021", trace_speedup=10.0, rate=2.5), 1, 100)
    assert 2 * a21 < len(thinned) < 3 * a21


def test_trace_selected_mid_run_starts_from_its_beginning_and_other_patterns_are_unchanged():
    wp = WorkloadParams(pattern="poisson", rate=3.0)
    plain = _generate(wp, seed=2, windows=30)
    # trace parameters do not touch the other patterns' draws
    np.testing.assert_array_equal(plain, _generate(WorkloadParams(pattern="poisson", rate=3.0, trace_file=A21, trace_speedup=9.0), 2, 30))
    stream = ArrivalStream(wp, np.random.default_rng(2))
    for _ in range(30):
        stream.next_window()
    wp.param.update(pattern="trace", rate=1.0, trace_file=A21, trace_format="azure2021")
    trace = replay.load_trace(A21, "azure2021")
    got = []
    for _ in range(20):
        got.extend(stream.next_window())
    np.testing.assert_allclose(got, 300.0 + trace.times[trace.times < 200.0], atol=1e-9)


# -- service times from the trace ----------------------------------------------------------------


def test_trace_service_takes_the_traces_durations():
    wp = _params(trace_file=A21, trace_format="azure2021", service_time=5.0, service_cv=0.5)
    st = ServiceTimes(wp, np.random.default_rng(1))
    gamma = [st.next() for _ in range(5000)]
    assert abs(np.mean(gamma) - 5.0) < 0.2
    allowed = set(np.maximum(_csv(A21)["duration"].to_numpy(), common.MIN_SERVICE))

    wp.param.update(trace_service=True)  # live: the next job draws from the trace
    durations = [st.next() for _ in range(5000)]
    assert set(durations) <= allowed and st.mean == 1.0
    assert abs(np.mean(durations) - replay.load_durations(A21, "azure2021").mean()) < 5.0
    wp.param.update(service_time=1.0)  # ignored while the trace gives service times
    assert st.next() in allowed

    wp.param.update(trace_service=False)
    back = [st.next() for _ in range(5000)]
    assert abs(np.mean(back) - 1.0) < 0.05

    again = ServiceTimes(_params(trace_file=A21, trace_format="azure2021", trace_service=True), np.random.default_rng(1))
    first = ServiceTimes(_params(trace_file=A21, trace_format="azure2021", trace_service=True), np.random.default_rng(1))
    assert [again.next() for _ in range(100)] == [first.next() for _ in range(100)]  # seeded


def test_trace_service_drives_the_job_flow():
    wp = _params(trace_function=F3, trace_speedup=12.0, trace_service=True)
    flow = JobFlow(ArrivalStream(wp, np.random.default_rng(1)), ServiceTimes(wp, np.random.default_rng(2)), record_jobs=True)
    flow.add_threads(WorkerSlot(0), 64, 0.0)
    flow.catch_up(600.0)
    jobs = pd.DataFrame(flow.rows, columns=["job", "arrival", "start", "end", "worker", "aborted", "left"])
    service = (jobs["end"] - jobs["start"]).to_numpy()
    table = replay.load_durations(A19, "azure2019", F3).table[0]
    assert service.min() >= common.MIN_SERVICE and service.max() <= table[-1] + 1e-9
    assert np.median(service) == pytest.approx(table[3], rel=0.05)  # 29 ms, not service_time's 5 s


# -- the scenario -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def azure_trace() -> Simulation:
    return Simulation("azure-trace").run()


def test_azure_trace_scenario_replays_the_day_in_two_hours(azure_trace: Simulation):
    scenario = load_scenario("azure-trace")
    wp = scenario.build_sections()["workload"]
    trace = replay.load_trace(wp.trace_file, wp.trace_format, wp.trace_function)
    s = azure_trace.samples()
    span = azure_trace.now * wp.trace_speedup  # trace seconds covered
    assert span == trace.span == 86400.0
    assert azure_trace.platform.jobs.arrived_total(azure_trace.now) == trace.count_between(0.0, span) == trace.total == 575863
    last = s["time"].iloc[-1]  # the last sample (7190 s; the run stops before the one at 7200 s)
    assert s["arrived_total"].iloc[-1] == trace.count_between(0.0, last * wp.trace_speedup)
    # every 10 s sample holds two trace minutes: its arrivals are exactly their counts
    pairs = trace.counts.reshape(-1, 2).sum(axis=1)
    np.testing.assert_array_equal(s["arrivals"].to_numpy(), pairs[: len(s)])


def test_azure_trace_scenario_scales_out_and_in_with_the_trace(azure_trace: Simulation):
    s = azure_trace.samples().set_index("time")
    busy = s.loc[1800:3600, "workers_active"].mean()  # trace hours 6-12: ~30k invocations an hour
    half = s.loc[5100:6300, "workers_active"].mean()  # hours 17-21: ~16k an hour
    quiet = s.loc[6900:7200, "workers_active"].mean()  # hour 23: none
    assert busy > 1.4 * half > 1.4 * quiet
    assert quiet <= 2
    d = azure_trace.decisions()
    assert (d["action"] == "scale_out").any() and (d.loc[d["time"] > 4000, "action"] == "scale_in").any()
    summary = azure_trace.summary()
    assert summary["jobs_completed"] == summary["jobs_arrived"]


def test_apply_checked_switches_a_running_simulation_to_a_trace():
    sim = Simulation(Scenario.from_dict({"run": {"duration": 300}, "workload": {"pattern": "poisson", "rate": 1.0}}))
    sim.advance(100)
    sim.set_params({"workload.pattern": "trace", "workload.trace_file": A21, "workload.trace_format": "azure2021", "workload.rate": 1.0})
    sim.advance(300)
    assert sim.samples()["arrivals"].sum() > 0
    apply_checked(sim.sections, {"workload.trace_loop": True})


def test_a_trace_session_replays_from_its_recording():
    sim = Simulation(Scenario.from_dict({"run": {"duration": 900}, "workload": {"pattern": "poisson", "rate": 2.0}}))
    sim.advance(200)
    sim.set_params(
        {"workload.pattern": "trace", "workload.trace_file": A19, "workload.trace_function": "row3", "workload.trace_speedup": 30.0}
    )
    sim.advance(400)
    sim.set_params({"workload.trace_service": True, "workload.rate": 0.5})
    sim.advance(600)
    again = Simulation.replay(sim.recording())  # raises if the samples differ
    pd.testing.assert_frame_equal(again.samples(), sim.samples())


def test_a_scenarios_function_slots_parse_the_azure2019_invocations_file_once(monkeypatch):
    """faas-azure's four slots, their durations and memory files all select rows of one invocations file: it is parsed
    once per process while unchanged (it was parsed 12 times, most of a page's start on that scenario)."""
    from engine.core import filecache
    from engine.workload.traces import azure2019

    filecache.clear()
    parsed: list = []
    real = azure2019._minute_block
    monkeypatch.setattr(azure2019, "_minute_block", lambda df, cols: parsed.append(cols) or real(df, cols))
    first = load_scenario("faas-azure")
    again = load_scenario("faas-azure")
    assert len(parsed) == 1
    assert first.to_dict() == again.to_dict()
