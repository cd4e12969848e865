"""The workflows of the hosting platform (.github/workflows) hold no logic of their own: every
`run:` step calls `make` targets that exist in the Makefile, installs system packages, or talks
to the host (`gh release create`, `gh issue create`). What each workflow must do is checked here;
`make lint` runs actionlint over them."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
NAMES = {"ci.yml", "publish.yml", "weekly.yml", "nightly.yml"}
#: The commands a run: step may use, besides make.
SYSTEM_PACKAGES = re.compile(r"^(sudo )?apt-get (update|install -y( --no-install-recommends)?)\b")
HOST_CALLS = re.compile(r"^gh (release create|issue create) ")
MAKE = re.compile(r"^make((?: [A-Za-z_][\w.-]*=\S+| [\w.-]+)+)$")


def load(path: Path) -> dict:
    return yaml.safe_load(path.read_text())


def triggers(workflow: dict) -> dict:
    # YAML 1.1 reads the key `on` as True.
    on = workflow.get("on", workflow.get(True))
    return on if isinstance(on, dict) else dict.fromkeys(on)


def steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w.-]*)\s*:(?!=)", text, re.MULTILINE))


def commands(run: str) -> list[str]:
    """The commands of a run: script, one per line and per `&&`."""
    joined = re.sub(r"\\\n\s*", " ", run)
    return [c.strip() for line in joined.splitlines() for c in line.split("&&") if c.strip()]


def problems_of_run(run: str, targets: set[str]) -> list[str]:
    problems = []
    for command in commands(run):
        if SYSTEM_PACKAGES.match(command) or HOST_CALLS.match(command):
            continue
        match = MAKE.match(command)
        if match is None:
            problems.append(f"not a make target, a system package or a host call: {command!r}")
            continue
        names = [w for w in match.group(1).split() if "=" not in w]
        if not names:
            problems.append(f"make without a target: {command!r}")
        problems += [f"no make target {n!r}: {command!r}" for n in names if n not in targets]
    return problems


def test_the_four_workflows_exist():
    assert {p.name for p in WORKFLOWS} == NAMES


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_run_step_calls_only_make_targets(path):
    targets = make_targets()
    problems = []
    for step in steps(load(path)):
        if "run" in step:
            problems += problems_of_run(step["run"], targets)
    assert not problems, f"{path.name}: {problems}"


def test_the_run_step_rule_can_fail():
    targets = {"test", "release"}
    assert problems_of_run("make test TORCH_INDEX=cpu", targets) == []
    assert problems_of_run("apt-get update && apt-get install -y chromium", targets) == []
    assert problems_of_run("make nosuch", targets)
    assert problems_of_run("pip install -r requirements.txt", targets)
    assert problems_of_run("make test && python -m pytest", targets)
    assert problems_of_run("make test; rm -rf /", targets)
    assert problems_of_run("make", targets)
    assert problems_of_run("gh api repos", targets)


def step_with(workflow: dict, action: str) -> dict:
    found = [s for s in steps(workflow) if s.get("uses", "").startswith(action + "@")]
    assert found, f"no step uses {action}"
    return found[0]


def runs(workflow: dict) -> list[str]:
    return [c for s in steps(workflow) if "run" in s for c in commands(s["run"])]


def test_ci_runs_the_readmes_test_command_on_every_push_and_pull_request():
    ci = load(ROOT / ".github/workflows/ci.yml")
    assert {"push", "pull_request"} <= set(triggers(ci))
    assert ci["concurrency"]["cancel-in-progress"] is True
    (job,) = ci["jobs"].values()
    assert job["container"].startswith("python:3.11-")
    assert "make test TORCH_INDEX=cpu" in runs(ci)
    assert any("install" in c and "chromium" in c for c in runs(ci))
    cache = step_with(ci, "actions/cache")["with"]
    assert "~/.cache/pip" in cache["path"] and ".venv" in cache["path"]
    assert "hashFiles('requirements.txt', 'pyproject.toml')" in cache["key"]
    assert step_with(ci, "actions/upload-artifact")["with"]["path"] == "_build/html"
    readme = (ROOT / "README.md").read_text()
    assert "make test TORCH_INDEX=cpu" in readme


def test_publish_checks_the_tag_first_then_releases_and_deploys():
    publish = load(ROOT / ".github/workflows/publish.yml")
    assert triggers(publish)["push"] == {"tags": ["v*"]}
    build = publish["jobs"]["build"]
    build_runs = [c for s in build["steps"] if "run" in s for c in commands(s["run"])]
    assert build_runs[0] == "make check-tag"
    assert "make release TORCH_INDEX=cpu" in build_runs and "make push-colab" in build_runs
    step_with(publish, "actions/configure-pages")
    assert step_with(publish, "actions/upload-pages-artifact")["with"]["path"] == "_build/html"
    step_with(publish, "actions/deploy-pages")
    assert publish["jobs"]["deploy"]["environment"]["name"] == "github-pages"
    assert publish["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert any(c.startswith("gh release create") for c in runs(publish))


def test_weekly_runs_the_readers_runtime_and_reports_failure():
    weekly = load(ROOT / ".github/workflows/weekly.yml")
    assert {"schedule", "workflow_dispatch"} <= set(triggers(weekly))
    assert step_with(weekly, "actions/setup-python")["with"]["python-version"] == "3.13"
    assert any(c.startswith("make reader-check") and "TORCH_INDEX=cpu" in c for c in runs(weekly))
    failing = [s for s in steps(weekly) if "failure()" in str(s.get("if", ""))]
    assert failing and failing[0]["run"].startswith("gh issue create")
    assert weekly["permissions"]["issues"] == "write"


def test_nightly_builds_with_the_newest_packages():
    nightly = load(ROOT / ".github/workflows/nightly.yml")
    assert "schedule" in triggers(nightly)
    assert any(c.startswith("make nightly") for c in runs(nightly))


def test_python_versions_of_the_workflows_are_the_declared_ones():
    """pyproject.toml's classifiers name exactly the Python versions the workflows test."""
    tested = set()
    for path in WORKFLOWS:
        for job in load(path)["jobs"].values():
            match = re.match(r"python:(3\.\d+)-", str(job.get("container", "")))
            if match:
                tested.add(match.group(1))
        for step in steps(load(path)):
            if step.get("uses", "").startswith("actions/setup-python@"):
                tested.add(str(step["with"]["python-version"]))
    text = (ROOT / "pyproject.toml").read_text()
    declared = set(re.findall(r'"Programming Language :: Python :: (3\.\d+)"', text))
    assert tested == declared == {"3.11", "3.13"}
    minimum = re.search(r'requires-python = ">=(3\.\d+)"', text).group(1)
    assert minimum == min(tested, key=lambda v: int(v.split(".")[1]))


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on the PATH")
def test_make_lint_runs_actionlint_over_every_workflow():
    result = subprocess.run(
        ["make", "-n", "-C", str(ROOT), "lint"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,  # asserted below, with make's stderr
    )
    assert result.returncode == 0, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if "actionlint" in line]
    assert all(f".github/workflows/{p.name}" in line for p in WORKFLOWS)


def test_actionlint_finds_a_broken_workflow(tmp_path):
    actionlint = ROOT / ".venv" / "bin" / "actionlint"
    if not actionlint.exists():
        pytest.skip("actionlint is installed with the venv (requirements.txt)")
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - uses: actions/cache@v5\n        with:\n          key: k\n"
    )
    result = subprocess.run(
        [str(actionlint), "-no-color", str(broken)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,  # a finding is the expected outcome
    )
    assert result.returncode == 1 and 'missing input "path"' in result.stdout
