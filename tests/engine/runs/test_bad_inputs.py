"""The bad-input corpus (tests/data/bad/): every case is one line on stderr naming the file and the field or line,
exit code 2, no traceback, and nothing written (a previous run's outputs untouched).

Each class of bad input users hit gets a file (or a command line) here: broken or hostile files (not UTF-8,
binary, alias bombs, deep nesting, duplicate keys), values of the wrong type or not finite, combinations the
sections refuse, traces that would be misread silently (a repeated header, extra fields, duplicate columns,
counts too large to hold), recordings that cannot be replayed, and output folders that cannot take a run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.runs.cli import main

ROOT = Path(__file__).resolve().parents[3]
BAD = ROOT / "tests" / "data" / "bad"
REC = BAD / "recordings"

#: (case, argv; {bad} is the corpus folder, {out} a folder holding an earlier run's outputs, {tmp} a scratch folder;
#: the text the one line must contain besides the file or option named first)
CASES = [
    ("scheduler-without-cluster", ["run", "{bad}/scheduler-without-cluster.yaml"], "scheduler: needs a cluster section"),
    ("not-utf8", ["run", "{bad}/not-utf8.yaml"], "not UTF-8 text (byte 0xe9"),
    ("binary", ["run", "{bad}/binary.yaml"], "not UTF-8 text"),
    ("deep-nesting", ["run", "{bad}/deep-nesting.yaml"], "nested deeper than 32 levels"),
    ("fault-time-string", ["run", "{bad}/fault-time-string.yaml"], "faults.master_crash_at[0]: 'soon' is not allowed"),
    (
        "fault-time-scalar",
        ["run", "{bad}/fault-time-scalar.yaml"],
        "faults.master_crash_at: 900 is not allowed; allowed: a list of numbers",
    ),
    ("fault-time-nan", ["run", "{bad}/fault-time-nan.yaml"], "faults.master_crash_at[0]: nan is not allowed; allowed: finite numbers"),
    ("outage-infinite", ["run", "{bad}/outage-infinite.yaml"], "faults.heartbeat_outages[0]: [100, inf] holds inf"),
    ("steps-overflow", ["run", "{bad}/steps-overflow.yaml"], "workload.steps[1]: multiple 1e+06 x rate 1000"),
    ("steps-nan-time", ["run", "{bad}/steps-nan-time.yaml"], "workload.steps[0]: [nan, 2.0] holds nan"),
    ("alias-bomb", ["run", "{bad}/alias-bomb.yaml"], "line 1, column 4: YAML anchors (&a) are not allowed"),
    ("duplicate-section", ["run", "{bad}/duplicate-section.yaml"], "line 3, column 1: key 'workload' repeats the one at line 1"),
    ("duplicate-key", ["run", "{bad}/duplicate-key.yaml"], "key 'MAX_WORKERS' repeats"),
    ("name-mapping", ["run", "{bad}/name-mapping.yaml"], "name: dict is not allowed; allowed: a string"),
    ("not-a-mapping", ["run", "{bad}/not-a-mapping.yaml"], "the file must hold a mapping of sections"),
    ("broken-yaml", ["run", "{bad}/broken-yaml.yaml"], "not valid YAML"),
    ("unknown-section", ["run", "{bad}/unknown-section.yaml"], "workloads: unknown section; allowed:"),
    ("unknown-parameter", ["run", "{bad}/unknown-parameter.yaml"], "autoscaler.MAX_WORKER: unknown parameter; allowed:"),
    ("out-of-range", ["run", "{bad}/out-of-range.yaml"], r"autoscaler.MAX_WORKERS: 5000 is out of range; allowed: an integer in [1, 1000]"),
    ("min-above-max", ["run", "{bad}/min-above-max.yaml"], "autoscaler.MIN_AVG_TIME: must be below MAX_AVG_TIME (40 >= 30)"),
    ("newer-version", ["run", "{bad}/newer-version.yaml"], "version: 9 is not supported"),
    ("too-long", ["run", "{bad}/too-long.yaml"], "of wall time"),
    ("missing-node-dump", ["run", "{bad}/missing-node-dump.yaml"], "cluster.kube_nodes_file: /nonexistent/nodes.json: no such file"),
    ("missing-scenario", ["run", "{bad}/absent.yaml"], "no such scenario file"),
    (
        "worker-gpu-model-unknown",
        ["run", "{bad}/worker-gpu-model-unknown.yaml"],
        "cluster.worker_gpu_models: 'H100|B200': no node has that GPU model; allowed: models of this cluster's nodes (A10|",
    ),
    (
        "worker-larger-than-every-node",
        ["run", "{bad}/worker-larger-than-every-node.yaml"],
        "cluster.worker_cpu_millis: 200000 millicores is more than any node has; allowed: at most 8000 (node ",
    ),
    (
        "worker-fits-no-single-node",
        ["run", "{bad}/worker-fits-no-single-node.yaml"],
        "cluster.worker_cpu_millis: 8000 millicores with 512 MiB and 1 GPU(s) fit no single node; allowed: a smaller worker (node ",
    ),
    (
        "file-the-topology-never-reads",
        ["run", "{bad}/file-the-topology-never-reads.yaml"],
        "cluster.kube_nodes_file: topology openb never reads it; allowed: remove it, or a topology that reads it (kube_nodes)",
    ),
    (
        "set-not-yaml",
        ["run", "default", "--set", "autoscaler.MAX_WORKERS=[5"],
        "--set autoscaler.MAX_WORKERS: line 1, column 3: not valid YAML",
    ),
    ("set-without-section", ["run", "default", "--set", "MAX_WORKERS=5"], "--set MAX_WORKERS: use section.NAME"),
    ("set-no-equals", ["run", "default", "--set", "autoscaler.MAX_WORKERS"], "expected NAME=VALUE"),
    ("until-nan", ["run", "default", "--until", "nan"], "--until: nan is not allowed"),
    ("until-negative", ["run", "default", "--until", "-5"], "--until: -5.0 is not allowed"),
    ("until-infinite", ["run", "default", "--until", "inf"], "--until: inf is not allowed"),
    ("until-huge", ["run", "default", "--until", "1e12"], "--until: 1000000000000.0 is not allowed"),
    ("until-zero", ["run", "default", "--until", "0"], "--until: 0.0 is not allowed; allowed: simulated seconds > 0"),
    ("grid-not-yaml", ["sweep", "default", "--grid", "autoscaler.MAX_WORKERS=[5,7", "--workers", "0"], "--grid autoscaler.MAX_WORKERS"),
    ("out-is-a-file", ["run", "default", "--until", "60", "--out", "{tmp}/afile"], "is a file; allowed: a directory"),
    ("out-below-a-file", ["run", "default", "--until", "60", "--out", "{tmp}/afile/sub"], "afile is a file; allowed: a directory path"),
    ("out-foreign-folder", ["run", "default", "--until", "60", "--out", "{tmp}/mine"], "holds files scalelab did not write (notes.txt)"),
    (
        "out-folder-where-a-file-goes",
        ["run", "default", "--until", "60", "--out", "{tmp}/clash"],
        "samples.parquet is a directory where an output file goes",
    ),
    ("out-kept-on-bad-scenario", ["run", "{bad}/min-above-max.yaml", "--out", "{out}"], "autoscaler.MIN_AVG_TIME"),
    ("out-kept-on-bad-until", ["run", "default", "--until", "nan", "--out", "{out}"], "--until: nan is not allowed"),
]

TRACE_CASES = [
    ("azure2019-header-repeated.csv", "azure2019", "line 3: repeats the header"),
    ("azure2019-negative-count.csv", "azure2019", "line 3, column '2': -3 is negative"),
    ("azure2019-non-numeric.csv", "azure2019", "line 3, column '2': 'many' is not a count"),
    ("azure2019-huge-count.csv", "azure2019", "line 3, column '2': 1e+15 invocations in one minute"),
    ("azure2019-duplicate-column.csv", "azure2019", "line 1, column '4': appears twice (columns 8 and 9)"),
    ("azure2019-header-only.csv", "azure2019", "the file has a header but no rows"),
    ("azure2019-extra-field.csv", "azure2019", "line 3: 10 fields where the header has 9"),
    ("azure2019-short-row.csv", "azure2019", "line 3: 7 fields where the header has 9"),
    ("azure2021-not-utf8.csv", "azure2021", "not a readable CSV file"),
    ("empty.csv", "azure2019", "the file is empty"),
]

RECORDING_CASES = [
    ("nan-time.json", "NaN is not JSON"),
    ("time-after-until.json", "inputs[1].time: 10000 is not allowed"),
    ("fault-arg-type.json", "inputs[1].args.duration: 'long' is not allowed; allowed: a number"),
    ("fault-arg-unknown.json", "inputs[1].args.length: not an argument of heartbeat_outage"),
    ("unknown-vm.json", "inputs[2]: fault.vm: 999 is not a listed worker VM"),
    ("unknown-node.json", "inputs[2]: fault.node: 'nope' is not a node of this cluster"),
    ("unknown-fault.json", "inputs[2].fault: 'meteor'"),
    ("until-huge.json", "until: 1000000000000.0 is not allowed"),
    ("newer-version.json", "version 7 is newer than this scalelab reads"),
    ("wrong-format.json", "format: 'something-else' is not allowed"),
    ("bad-changes.json", "inputs[0]: autoscaler.MAX_WORKERS: 5000 is out of range"),
    ("not-an-object.json", "must be a JSON object"),
    ("truncated.json", "not valid JSON"),
    ("binary.json", "not UTF-8 text"),
    # good.json with its digest zeroed, removed, or a parameter change edited by hand: the digest is compared
    ("zeroed-digest.json", "samples_sha256: the replay's samples have digest 121e137a7fd0edfd..., the recording says 0000000000000000..."),
    ("hand-edited-change.json", "samples_sha256: the replay's samples have digest"),
    ("missing-digest.json", "samples_sha256: missing, so the replay cannot be verified"),
    # good.json's scenario with a field its topology never reads, or a worker no node can host
    ("scenario-field-never-read.json", "scenario: cluster.kube_nodes_file: topology urban_sensing never reads it"),
    ("scenario-worker-unhostable.json", "scenario: cluster.worker_memory_mib: 1048576 MiB is more than any node has; allowed: at most"),
]


SESSIONS = BAD / "sessions"
SESSION_CASES = [
    ("truncated.scalelab", "not a readable .scalelab session file (a truncated or corrupted zip"),
    ("not-a-zip.scalelab", "not a readable .scalelab session file"),
    ("bad-parquet.scalelab", "tables/events.parquet: not a readable Parquet table"),
    ("tampered-table.scalelab", "tables/samples.parquet: sha256: the table differs from its digest"),
    ("hand-edited-manifest.scalelab", "manifest.json: digest: does not match the tables' digests"),
    ("hand-edited-inputs.scalelab", "manifest.json: NaN is not JSON"),
    ("newer-version.scalelab", "version 9 is newer than this scalelab reads (2)"),
    ("unknown-version.scalelab", "manifest.json: version: '2' is not supported; allowed: 2"),
    ("extra-member.scalelab", "member 'tables/../../evil.txt': a path outside the file"),
]


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir()} if folder.exists() else {}


@pytest.fixture(scope="module")
def earlier_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("earlier") / "out"
    assert main(["run", "default", "--until", "120", "--out", str(out)]) == 0
    return out


@pytest.fixture
def scratch(tmp_path) -> Path:
    (tmp_path / "afile").write_text("not a folder")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("a user's file")
    (tmp_path / "clash" / "samples.parquet").mkdir(parents=True)
    return tmp_path


def one_error_line(capsys, code: int) -> str:
    captured = capsys.readouterr()
    assert code == 2, captured.out + captured.err
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    assert "Traceback" not in captured.err
    return lines[0]


@pytest.mark.parametrize(("case", "argv", "expected"), CASES, ids=[c[0] for c in CASES])
def test_every_bad_input_is_one_line_naming_its_file_with_exit_code_2(case, argv, expected, capsys, earlier_run, scratch):
    before = snapshot(earlier_run)
    args = [a.format(bad=BAD, out=earlier_run, tmp=scratch) for a in argv]
    line = one_error_line(capsys, main(args))
    assert expected in line, line
    option = next((a for a in ("--out", "--until", "--set", "--grid") if a in args and line.startswith(f"error: {a}")), None)
    named = option or args[1]  # the option at fault, else the scenario
    assert line.startswith(f"error: {named}") or line.startswith(f"error: {BAD / Path(named).name}"), f"{line} does not start with {named}"
    assert snapshot(earlier_run) == before, "an earlier run's outputs changed"
    assert not (scratch / "afile" / "sub").exists() and sorted(p.name for p in (scratch / "mine").iterdir()) == ["notes.txt"]


@pytest.mark.parametrize(("trace", "fmt", "expected"), TRACE_CASES, ids=[c[0] for c in TRACE_CASES])
def test_every_bad_trace_names_the_file_and_line(trace, fmt, expected, capsys, tmp_path):
    scenario = tmp_path / "trace.yaml"
    scenario.write_text(json.dumps({"workload": {"pattern": "trace", "trace_file": str(BAD / "traces" / trace), "trace_format": fmt}}))
    line = one_error_line(capsys, main(["run", str(scenario), "--until", "60"]))
    assert f"{scenario}: workload.trace_file: {BAD / 'traces' / trace}" in line and expected in line, line


@pytest.mark.parametrize(("recording", "expected"), RECORDING_CASES, ids=[c[0] for c in RECORDING_CASES])
def test_every_bad_recording_names_the_file(recording, expected, capsys, earlier_run):
    before = snapshot(earlier_run)
    line = one_error_line(capsys, main(["replay", str(REC / recording), "--out", str(earlier_run)]))
    assert line.startswith(f"error: {REC / recording}: ") and expected in line, line
    assert snapshot(earlier_run) == before


@pytest.mark.parametrize(("session", "expected"), SESSION_CASES, ids=[c[0] for c in SESSION_CASES])
def test_every_bad_session_file_names_the_file(session, expected, capsys, earlier_run):
    before = snapshot(earlier_run)
    line = one_error_line(capsys, main(["replay", str(SESSIONS / session), "--out", str(earlier_run)]))
    assert line.startswith(f"error: {SESSIONS / session}: ") and expected in line, line
    assert snapshot(earlier_run) == before


def test_the_good_session_file_of_the_corpus_replays(capsys):
    assert main(["replay", str(SESSIONS / "good.scalelab"), "--verify"]) == 0


def test_the_good_recording_of_the_corpus_replays(capsys, tmp_path):
    assert main(["replay", str(REC / "good.json"), "--out", str(tmp_path / "out")]) == 0
    assert "reproduces the recorded samples exactly" in capsys.readouterr().out


def test_a_long_run_is_refused_with_its_estimate_and_a_long_one_is_announced(capsys, monkeypatch):
    line = one_error_line(capsys, main(["run", "default", "--set", "workload.rate=60000", "--until", "86400"]))
    assert "--until 86400: this run would take ~" in line and "allowed: a shorter run, or --allow-long" in line
    line = one_error_line(capsys, main(["run", str(BAD / "too-long.yaml")]))
    assert "too-long.yaml: run.duration 2.592e+06: this run would take ~" in line
    from engine.core import budget

    monkeypatch.setattr(budget, "WARN_SECONDS", 0.01)  # a quick run over a lowered threshold: the warning path
    monkeypatch.setattr(budget, "REFUSE_SECONDS", 0.02)
    assert main(["run", "default", "--until", "600", "--allow-long"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: this run will take ~") and "simulated s (~" in err


def test_outputs_replace_an_earlier_run_whole_and_leave_no_stale_file(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["run", "default", "--until", "60", "--set", "run.record_jobs=true", "--out", str(out)]) == 0
    assert (out / "jobs.parquet").exists()
    assert main(["run", "default", "--until", "60", "--out", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert "jobs.parquet" not in names and "samples.parquet" in names and ".scalelab-run" in names
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")], "a staging folder was left behind"


def test_the_cli_process_exits_2_without_a_traceback():
    r = subprocess.run(
        [sys.executable, "-m", "engine", "run", str(BAD / "alias-bomb.yaml")], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr and "alias-bomb.yaml" in r.stderr


@pytest.fixture
def immutable(tmp_path):
    """A folder nobody may write to, root included (``chattr +i``; skipped where the file system has no such flag)."""
    folder = tmp_path / "locked"
    (folder / "earlier").mkdir(parents=True)
    assert main(["run", "default", "--until", "30", "--out", str(folder / "earlier")]) == 0
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    yield folder
    subprocess.run(["chattr", "-i", str(folder)], check=True)


@pytest.mark.parametrize("target", ["new", "earlier", "new/deeper"])
def test_out_in_a_read_only_folder_is_refused_before_the_run(target, immutable, capsys):
    """As root, permission bits do not stop writes, so the folder is made immutable; the outputs would be staged
    beside --out (in the locked folder), so an earlier run's folder inside it cannot be replaced either."""
    capsys.readouterr()
    before = snapshot(immutable / "earlier")
    out = immutable / target
    line = one_error_line(capsys, main(["run", "default", "--until", "30", "--out", str(out)]))
    assert line == f"error: --out {out}: {immutable} is not writable; allowed: a directory you can write to"
    assert snapshot(immutable / "earlier") == before and sorted(p.name for p in immutable.iterdir()) == ["earlier"]


def test_a_cluster_without_a_scheduler_runs_and_says_which_default_applies(capsys, tmp_path):
    """The choice (docs/reference/input-limits.md): a cluster is scheduled on by the default scheduler, said in one
    line on stderr naming the file and the section; with the section named (here by --set) nothing is said."""
    path = BAD / "cluster-without-scheduler.yaml"
    assert main(["run", str(path), "--until", "30", "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"note: {path}: scheduler: not given with cluster, so every scheduler.* parameter has its default (mode skippy); "
        "add 'scheduler:' to choose"
    ]
    assert main(["run", str(path), "--until", "30", "--set", "scheduler.mode=kube"]) == 0
    assert capsys.readouterr().err == ""


def _oversized(path: Path, prefix: bytes) -> Path:
    """``prefix`` then comment or blank padding to one byte past the 16 MiB input cap (made here, not shipped)."""
    from engine.core.inputs import MAX_BYTES

    path.write_bytes(prefix + b" " * (MAX_BYTES + 1 - len(prefix)))
    return path


@pytest.mark.parametrize(
    ("command", "name", "prefix", "what"),
    [
        ("run", "huge.yaml", b"version: 1\n#", "a scenario YAML file"),
        ("replay", "huge.json", b'{"format": "scalelab-recording"', "a recording file"),
    ],
)
def test_an_input_above_the_size_cap_names_the_cap(command, name, prefix, what, tmp_path, capsys):
    path = _oversized(tmp_path / name, prefix)
    line = one_error_line(capsys, main([command, str(path)]))
    assert line == f"error: {path}: 16,777,217 bytes, above the size cap of {what}; allowed: at most 16 MiB (16,777,216 bytes)"


def test_a_session_manifest_above_its_cap_names_the_cap(tmp_path, capsys):
    import zipfile

    path = tmp_path / "big-manifest.scalelab"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("manifest.json", b"{" + b" " * (16 * 2**20) + b"}")  # compresses to a few KiB
    line = one_error_line(capsys, main(["replay", str(path)]))
    assert line == (
        f"error: {path}: manifest.json: 16,777,218 bytes, above the size cap of a manifest; allowed: at most 16 MiB (16,777,216 bytes)"
    )


def test_export_into_a_read_only_folder_is_refused_before_anything_is_made(immutable, capsys):
    capsys.readouterr()
    page = immutable / "page.html"
    line = one_error_line(capsys, main(["export", str(SESSIONS / "good.scalelab"), "--html", str(page)]))
    assert line == f"error: --html {page}: {immutable} is not writable; allowed: a directory you can write to"
    assert sorted(p.name for p in immutable.iterdir()) == ["earlier"]
