"""Installed, tracescore is one top-level package, ``tracescore``: its wheel holds that package and its
metadata and nothing else, builds without a warning, and an application with modules of its own named
``schemas``, ``scoring`` or ``ingest`` imports all of tracescore with neither side shadowing the other.

The wheel is built from the files the image build copies (pyproject.toml, README.md, LICENSE,
tracescore/ and the folders it links), by setuptools itself, offline; pip installs it into a folder of
its own, and the application runs beside it without this source tree on its path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

import tracescore
from tracescore import scoring

REPO = Path(__file__).resolve().parents[1]
FOLDERS = ("ingest", "scoring", "schemas")
# What the image build copies (Dockerfile), which is all a build needs.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "tracescore", *FOLDERS)
LEFT_OUT = shutil.ignore_patterns("__pycache__", "*.pyc")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel built from a copy of the sources, and everything the build printed."""
    root = tmp_path_factory.mktemp("build")
    source, out = root / "source", root / "dist"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, source / name, symlinks=True, ignore=LEFT_OUT)
        else:
            shutil.copy2(REPO / name, source / name)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "always",
            "-c",
            f"from setuptools import build_meta; print(build_meta.build_wheel({str(out)!r}))",
        ],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (name,) = done.stdout.split()[-1:]
    return out / name, done.stdout + done.stderr


def test_the_build_prints_no_warning(built: tuple[Path, str]) -> None:
    _, printed = built
    warnings = [line for line in printed.splitlines() if "warn" in line.lower()]
    assert not warnings, "\n".join(warnings[:10])


def test_the_wheel_holds_one_top_level_package_and_every_file_of_the_folders(built: tuple[Path, str]) -> None:
    wheel, _ = built
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"tracescore", "tracescore-0.1.0.dist-info"}
    metadata = {
        name.rsplit("/", 1)[1]: name for name in names if name.startswith("tracescore-0.1.0.dist-info/")
    }
    with zipfile.ZipFile(wheel) as archive:
        assert archive.read(metadata["top_level.txt"]).decode().split() == ["tracescore"]
        entry_points = archive.read(metadata["entry_points.txt"]).decode()
    assert "tracescore = tracescore.ingest.cli:main" in entry_points
    # every module, SQL file, prompt and data file of the folders, under tracescore/
    expected = {"tracescore/__init__.py", "tracescore/__main__.py", "tracescore/py.typed"} | {
        f"tracescore/{path.relative_to(REPO).as_posix()}"
        for folder in FOLDERS
        for path in (REPO / folder).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }
    packaged = {name for name in names if name.startswith("tracescore/")}
    assert packaged == expected, (sorted(expected - packaged)[:10], sorted(packaged - expected)[:10])
    assert "tracescore/schemas/sql/otel_traces.sql" in packaged


# The application: its own modules under the names our folders have in the repository.
APP_MODULES = {
    "schemas.py": "OWNER = 'app'\n",
    "scoring.py": "OWNER = 'app'\n",
    "ingest/__init__.py": "OWNER = 'app'\n",
}

# rename: keep (the application's own ingest, schemas and scoring)
PROBE = """
import importlib, json, pkgutil, sys
import ingest, schemas, scoring  # the application's own
from tracescore import create_scorer, run_evals
from tracescore.scoring.prebuilt import create_answer_relevancy_scorer
import tracescore
modules = [m.name for m in pkgutil.walk_packages(tracescore.__path__, "tracescore.")]
for name in modules:
    if not name.endswith("__main__"):
        importlib.import_module(name)
import schemas as again
print(json.dumps({
    "modules": len(modules),
    "app": [m.OWNER for m in (ingest, schemas, scoring, again)],
    "top_level": sorted(m for m in sys.modules if m.split(".")[0] in ("ingest", "schemas", "scoring")),
    "files": sorted({sys.modules[m].__file__.split("/tracescore/")[0] for m in sys.modules
                     if m.startswith("tracescore") and getattr(sys.modules[m], "__file__", None)}),
    "api": [create_scorer.__module__, run_evals.__module__, create_answer_relevancy_scorer.__name__],
}))
"""


def test_an_application_with_its_own_schemas_module_imports_all_of_tracescore(
    built: tuple[Path, str], tmp_path: Path
) -> None:
    wheel, _ = built
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--target",
            site,
            wheel,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    assert sorted(p.name for p in site.iterdir() if p.name != "bin") == [
        "tracescore",
        "tracescore-0.1.0.dist-info",
    ]
    app = tmp_path / "app"
    for name, text in APP_MODULES.items():
        (app / name).parent.mkdir(parents=True, exist_ok=True)
        (app / name).write_text(text)
    # -S: no site-packages of this environment (so not this source tree's editable install); the
    # installed folder, then the dependencies, after the application's own directory
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{sysconfig.get_paths()['purelib']}"}
    done = subprocess.run(
        [sys.executable, "-S", "-c", PROBE], cwd=app, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout)
    assert seen["app"] == ["app"] * 4, "the application's modules were shadowed"
    assert seen["top_level"] == ["ingest", "schemas", "scoring"]  # the application's, none of ours
    assert seen["files"] == [str(site)], "tracescore was imported from somewhere else"
    assert seen["modules"] > 150
    assert seen["api"] == [
        "tracescore.scoring.framework.scorer",
        "tracescore.scoring.framework.evals",
        "create_answer_relevancy_scorer",
    ]
    for command in (["-m", "tracescore", "--version"], ["-m", "tracescore.ingest.cli", "--version"]):
        version = subprocess.run(
            [sys.executable, "-S", *command], cwd=app, env=env, capture_output=True, text=True, timeout=120
        )
        assert version.stdout.strip() == "tracescore 0.1.0", version.stderr[-2000:]


def test_the_top_level_names_are_the_scoring_api_loaded_on_first_use() -> None:
    assert set(tracescore.__all__) == set(scoring.__all__)
    for name in scoring.__all__:
        assert getattr(tracescore, name) is getattr(scoring, name), name
    probe = "import sys, tracescore.schemas; print('tracescore.scoring' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False", "importing the data types loaded the scoring stack"
    with pytest.raises(AttributeError, match="has no attribute 'create_scorers'"):
        _ = tracescore.create_scorers
