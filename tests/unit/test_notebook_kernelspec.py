"""Every committed notebook (the sources and the executed copies) names the kernel the venv
installs and its language as that kernel reports it — what JupyterLab writes into a notebook when
its kernel starts — so opening one to read leaves ``git status`` clean. (The language's patch
version is the machine's Python: checked to the minor version, the one this project pins.)"""

from __future__ import annotations

import json

import pytest
from jupyter_client.kernelspec import KernelSpecManager

from pglimits_core.config import PROJECT_ROOT

NOTEBOOKS = sorted([*(PROJECT_ROOT / "notebooks").glob("*.ipynb"),
                    *(PROJECT_ROOT / "data" / "results").glob("*/*/notebooks/*.ipynb")])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[str(p.relative_to(PROJECT_ROOT)) for p in NOTEBOOKS])
def test_a_committed_notebook_names_the_installed_kernel_as_jupyter_writes_it(path):
    installed = KernelSpecManager().get_kernel_spec("python3")
    spec = json.loads(path.read_text())["metadata"]["kernelspec"]
    assert spec == {"display_name": installed.display_name, "language": installed.language, "name": "python3"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[str(p.relative_to(PROJECT_ROOT)) for p in NOTEBOOKS])
def test_a_committed_notebook_carries_the_language_info_the_kernel_reports(path):
    from ipykernel.ipkernel import IPythonKernel

    reported = dict(IPythonKernel.language_info)
    found = json.loads(path.read_text())["metadata"]["language_info"]
    assert found["version"].rsplit(".", 1)[0] == reported.pop("version").rsplit(".", 1)[0]
    assert {k: v for k, v in found.items() if k != "version"} == reported


def test_there_are_notebooks_to_check():
    assert len(NOTEBOOKS) >= 6
