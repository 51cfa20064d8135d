"""The Helm chart rendered and linted by Helm itself, and its objects as Kubernetes would see them.

Helm here is Helm's Go SDK (the engine, the Sprig functions and the linter of the ``helm`` command),
reached through ``helm_python`` (PyPI ``helm-python-sdk``, a test dependency): ``render`` is
``helm template``, ``lint`` is ``helm lint``. No cluster is involved.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python
import yaml

CHART = Path(__file__).resolve().parents[2] / "deploy" / "helm" / "tracescore"
RELEASE = "tracescore"
NAMESPACE = "observability"
CONFIG_FILE = "/etc/tracescore/tracescore.yaml"


@dataclass
class Rendered:
    """What ``helm template`` prints: each template's text, and the objects parsed from them."""

    files: dict[str, str]
    objects: list[dict[str, Any]]

    @property
    def notes(self) -> str:
        return self.files[f"{CHART.name}/templates/NOTES.txt"]

    def kinds(self) -> list[str]:
        return sorted(obj["kind"] for obj in self.objects)

    def one(self, kind: str) -> dict[str, Any]:
        found = [obj for obj in self.objects if obj["kind"] == kind]
        assert len(found) == 1, f"{len(found)} objects of kind {kind}: {self.kinds()}"
        return found[0]

    def find(self, kind: str) -> dict[str, Any] | None:
        found = [obj for obj in self.objects if obj["kind"] == kind]
        return found[0] if found else None

    @property
    def pod(self) -> dict[str, Any]:
        """The pod template's spec."""
        spec: dict[str, Any] = self.one("Deployment")["spec"]["template"]["spec"]
        return spec

    @property
    def container(self) -> dict[str, Any]:
        (container,) = self.pod["containers"]
        return dict(container)

    @property
    def config_text(self) -> str:
        """tracescore.yaml as the ConfigMap holds it."""
        text: str = self.one("ConfigMap")["data"][Path(CONFIG_FILE).name]
        return text

    @property
    def config(self) -> dict[str, Any]:
        data: dict[str, Any] = yaml.safe_load(self.config_text)
        return data


def render(
    values: dict[str, Any] | None = None, *, release: str = RELEASE, namespace: str = NAMESPACE
) -> Rendered:
    """``helm template RELEASE CHART -n NAMESPACE -f values``; every manifest parsed with PyYAML."""
    with helm_python.Chart.load(CHART) as chart:
        files = chart.render(values, name=release, namespace=namespace, is_install=True)
    objects: list[dict[str, Any]] = []
    for path, text in sorted(files.items()):
        if not path.endswith((".yaml", ".yml")):
            continue
        for document in yaml.safe_load_all(text):
            if document is None:
                continue
            assert isinstance(document, dict), f"{path}: {document!r}"
            for key in ("apiVersion", "kind", "metadata"):
                assert key in document, f"{path}: no {key}"
            objects.append(document)
    return Rendered(files=files, objects=objects)


def render_error(values: dict[str, Any]) -> str:
    """The message Helm stops with for these values (it must stop)."""
    try:
        render(values)
    except helm_python.HelmError as exc:
        return str(exc)
    raise AssertionError(f"the chart rendered with {values}")


def lint(values: dict[str, Any] | None = None) -> dict[str, Any]:
    """``helm lint --strict``: {"messages": [{"severity", "path", "error"}], "errors": [...]}."""
    report: dict[str, Any] = helm_python.lint(CHART, values, strict=True, namespace=NAMESPACE)
    return report


def mount_secrets(rendered: Rendered, root: Path, secret_data: dict[str, str] | None = None) -> Path:
    """Write the pod's secret volume under ``root`` as the kubelet would: each item of the volume, from
    the data of the Secret it names (the chart's, or ``secret_data`` for an existing Secret), at its
    path. Returns the directory standing for the volume's mount path."""
    volume = next(v for v in rendered.pod["volumes"] if v["name"] == "secrets")
    (mount,) = [m for m in rendered.container["volumeMounts"] if m["name"] == "secrets"]
    if secret_data is None:
        secret = rendered.one("Secret")
        assert secret["metadata"]["name"] == volume["secret"]["secretName"]
        secret_data = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    mount_path: str = mount["mountPath"]
    directory = root / mount_path.strip("/")
    directory.mkdir(parents=True)
    for item in volume["secret"]["items"]:
        (directory / item["path"]).write_text(secret_data[item["key"]])
    return directory
