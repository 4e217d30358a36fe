"""environment.yml stays in step with pyproject.toml: the same packages (runtime, test and docs), Python 3.12."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _name(requirement: str) -> str:
    return re.split(r"[<>=\[ ;]", requirement, maxsplit=1)[0].lower()


def test_environment_yml_lists_every_pyproject_dependency():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    wanted = {_name(r) for r in project["dependencies"] + extras["test"] + extras["docs"]}
    wanted = {"distributed" if n == "dask" else n for n in wanted} | {"dask"}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = env["dependencies"]
    conda = {_name(d) for d in deps if isinstance(d, str)}
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    have = conda | {_name(p) for p in pip if not p.startswith("-e")}
    assert "python=3.12" in deps
    assert "-e ." in pip
    assert wanted <= have, f"missing from environment.yml: {sorted(wanted - have)}"
    extra = have - wanted - {"python", "pip"}
    assert not extra, f"in environment.yml but not in pyproject.toml: {sorted(extra)}"


def test_the_docs_extra_is_part_of_the_test_extra():
    """`make test` builds the docs, so the test install (.[test]) brings everything the docs build needs."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert {_name(r) for r in extras["docs"]} <= {_name(r) for r in extras["test"]}
