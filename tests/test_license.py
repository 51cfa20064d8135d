"""The project's license is what pyproject.toml says: the Apache License 2.0, its standard text in
``LICENSE``, named by the package metadata (PEP 639) and copied into the image's build."""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# SHA-256 of the Apache License 2.0 as the Apache Software Foundation publishes it (LICENSE-2.0.txt).
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"


def test_license_is_the_standard_apache_2_text() -> None:
    text = (REPO / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text
    assert hashlib.sha256(text.encode()).hexdigest() == APACHE_2_SHA256


def test_the_package_metadata_names_the_license_file() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    assert project["project"]["license"] == "Apache-2.0"
    assert project["project"]["license-files"] == ["LICENSE"]
    # license as an SPDX expression with license-files: setuptools 77 or newer
    backend = next(r for r in project["build-system"]["requires"] if r.startswith("setuptools"))
    assert backend == "setuptools>=77"


def test_the_image_build_copies_the_license_file() -> None:
    copied = {
        source
        for line in (REPO / "Dockerfile").read_text().splitlines()
        if (match := re.match(r"COPY (?!--from)(.*)", line))
        for source in match.group(1).split()[:-1]
    }
    assert "LICENSE" in copied
