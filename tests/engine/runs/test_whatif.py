"""``python -m engine whatif``: the shipped history through each policy, the table written, and bad files refused in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from engine.runs.cli import main
from engine.runs.whatif import COLUMNS, _sections, read_history, whatif

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "data" / "whatif" / "example-hpa.csv"
BAD = ROOT / "tests" / "data" / "bad" / "whatif"


@pytest.mark.parametrize("policy", ["hpa", "kpa", "keda", "queue_drain"])
def test_example_history_through_each_policy(policy: str, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "rec.csv"
    assert main(["whatif", str(EXAMPLE), "--policy", policy, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"whatif {EXAMPLE}: policy {policy}")
    table = pd.read_csv(out)
    history = pd.read_csv(EXAMPLE)
    assert tuple(table.columns) == COLUMNS and len(table) == len(history)
    assert (table["replicas"] == history["replicas"]).all() and (table["time"] == history["time"]).all()
    assert table["recommended"].between(0, 20).all()  # autoscaler.MAX_WORKERS
    assert table["rule"].notna().all()
    assert f"wrote {out} ({len(table)} rows)" in printed


def test_hpa_rules_on_a_small_history() -> None:
    history = pd.DataFrame({"time": [0.0, 15, 30, 45, 60], "replicas": [2, 2, 2, 2, 2], "metric": [160.0, 80, 80, 20, 20]})
    table = whatif(history, "hpa", "cpu_utilisation", mode="open")
    # 160 % of an 80 % target on 2 replicas: 4 wanted; within tolerance: hold; 20 %: 1 wanted, the down window keeps 2
    assert table["recommended"].tolist() == [4, 2, 2, 2, 2]
    assert "1 wanted, 2" in table["rule"][3]
    assert "utilisation 160% / target 80% = 2.000: 4 wanted" in table["rule"][0]
    follow = whatif(history, "hpa", "cpu_utilisation", mode="follow")
    # following its own 4 replicas, the recorded load of 2 x 80 % is 40 % each: 2 wanted, but the down window keeps 4
    assert follow["recommended"].tolist()[:2] == [4, 4]
    assert "utilisation 40%" in follow["rule"][1]


def test_set_changes_the_policy(capsys: pytest.CaptureFixture) -> None:
    history, metric = read_history(EXAMPLE, "hpa")
    sections = _sections()
    sections["hpa"].target_utilization = 40
    lower = whatif(history, "hpa", metric, sections)
    assert main(["whatif", str(EXAMPLE), "--policy", "hpa", "--set", "hpa.target_utilization=40"]) == 0
    default = whatif(history, "hpa", metric)
    assert (lower["recommended"] >= default["recommended"]).all() and (lower["recommended"] > default["recommended"]).any()
    assert "target 40%" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "policy", "expected"),
    [
        ("not-a-number.csv", "hpa", "line 3, column 'cpu_utilisation': 'fifty' is not a measurement; allowed: numbers >= 0"),
        ("fractional-replicas.csv", "hpa", "line 3, column 'replicas': '1.5' is not a replica count; allowed: integers >= 0"),
        ("negative-replicas.csv", "hpa", "line 2, column 'replicas': -1 is negative; allowed: integers >= 0"),
        ("time-goes-back.csv", "hpa", "line 4, column 'time': 5 does not follow 10; allowed: increasing times"),
        ("no-metric.csv", "hpa", "column 'cpu_utilisation': missing; hpa reads time, replicas and cpu_utilisation"),
        ("no-metric.csv", "queue_drain", "column 'avg_time': missing; queue_drain reads time, replicas and queue_length"),
        ("no-replicas.csv", "kpa", "column 'replicas': missing; kpa reads time, replicas and concurrency"),
        ("short-row.csv", "hpa", "line 3: 2 fields where the header has 3; allowed: one field per column"),
        ("pending-above-replicas.csv", "hpa", "line 2, column 'pending': 2 exceeds replicas (1); allowed: 0..replicas"),
        ("header-only.csv", "hpa", "empty history: the file has a header but no rows"),
    ],
)
def test_bad_files_one_line_exit_2(name: str, policy: str, expected: str, tmp_path: Path) -> None:
    out = tmp_path / "rec.csv"
    proc = subprocess.run(
        [sys.executable, "-m", "engine", "whatif", str(BAD / name), "--policy", policy, "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: whatif: {BAD / name}") and expected in lines[0], lines[0]
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--policy", "vpa"], "error: --policy vpa: not a policy; allowed: hpa, kpa, keda, queue_drain"),
        (["--policy", "hpa", "--set", "hpa.target_utilization=0"], "error: hpa.target_utilization: 0 is out of range"),
        (["--policy", "hpa", "--set", "hpa.nope=1"], "error: hpa.nope: unknown parameter"),
        (["--policy", "hpa", "--mode", "closed"], "error: --mode closed: not a mode; allowed: follow, open"),
        (["--policy", "hpa", "--out", "/proc"], "error: --out /proc: is a directory"),
    ],
)
def test_bad_options_one_line(args: list[str], expected: str, capsys: pytest.CaptureFixture) -> None:
    assert main(["whatif", str(EXAMPLE), *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(expected), err


def test_missing_file(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    assert main(["whatif", str(tmp_path / "none.csv"), "--policy", "keda"]) == 2
    assert "none.csv: no such file" in capsys.readouterr().err


def test_a_row_without_a_measurement_keeps_the_count() -> None:
    history = pd.DataFrame({"time": [0.0, 15, 30], "replicas": [3, 3, 3], "metric": [80.0, float("nan"), 80.0]})
    for mode in ("open", "follow"):
        table = whatif(history, "hpa", "cpu_utilisation", mode=mode)
        assert table["recommended"].tolist() == [3, 3, 3], mode
        assert table["action"][1] == "not_measured" and table["rule"][1] == "no ready worker reports cpu"


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_the_written_table_reads_back(suffix: str, tmp_path: Path) -> None:
    from engine import read_whatif_table

    out = tmp_path / f"rec{suffix}"
    assert main(["whatif", str(EXAMPLE), "--policy", "kpa", "--out", str(out)]) == 0
    back = read_whatif_table(out)
    history, metric = read_history(EXAMPLE, "kpa")
    expected = whatif(history, "kpa", metric)
    pd.testing.assert_frame_equal(back.reset_index(drop=True), expected, check_dtype=False)


def test_a_bad_table_is_one_line(tmp_path: Path) -> None:
    from engine import read_whatif_table
    from engine.core.csvfile import FileError

    bad = tmp_path / "t.csv"
    bad.write_text("time,replicas,metric,recommended,action,rule\n0,1,,1,hold,x\n")
    with pytest.raises(FileError, match=r"t.csv: column 'change': missing; a whatif table has columns time, replicas"):
        read_whatif_table(bad)
    bad.write_text("time,replicas,metric,recommended,action,change,rule\n0,1,,1,hold,maybe,x\n")
    with pytest.raises(FileError, match=r"line 2, column 'change': 'maybe' is not allowed; allowed: True or False"):
        read_whatif_table(bad)
