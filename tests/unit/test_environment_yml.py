"""environment.yml (the conda way in) pins exactly what pyproject.toml pins."""

import tomllib

import yaml

from pglimits_core.config import PROJECT_ROOT


def test_environment_yml_pins_the_same_packages_as_pyproject():
    project = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]
    pinned = set(project["dependencies"]) | set(project["optional-dependencies"]["dev"])
    environment = yaml.safe_load((PROJECT_ROOT / "environment.yml").read_text())
    conda = [entry for entry in environment["dependencies"] if isinstance(entry, str)]
    pip = next(entry["pip"] for entry in environment["dependencies"] if isinstance(entry, dict))
    assert "python=3.11" in conda
    assert set(pip) - {"-e .[dev]"} == pinned, "environment.yml and pyproject.toml pin different packages"
    assert "-e .[dev]" in pip
