"""environment.yml stays in step with pyproject.toml: same dependencies, Python 3.12."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _name(requirement: str) -> str:
    return re.split(r"[<>=\[ ;]", requirement, maxsplit=1)[0].lower()


def test_environment_yml_lists_every_pyproject_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]}
    wanted = {"distributed" if n == "dask" else n for n in wanted} | {"dask"}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    conda = {_name(d) for d in deps if isinstance(d, str)}
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    have = conda | {_name(p) for p in pip if not p.startswith("-e")}
    assert "python=3.12" in deps
    assert "-e ." in pip
    assert wanted <= have, f"missing from environment.yml: {sorted(wanted - have)}"
