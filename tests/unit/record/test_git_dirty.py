"""A record's "uncommitted changes" flag speaks of the code: the tables and figures a study
writes into its own checkout while it runs do not make the next run's record dirty."""

import subprocess

from pglimits_core.record import manifest


def _repo(tmp_path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
    git("init", "-q")
    for path in ("code.py", "data/results/m/full/tables/t.md", "figures/m/f.svg"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("v1\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "one")
    return tmp_path


def test_generated_outputs_do_not_make_the_tree_dirty(tmp_path, monkeypatch):
    repo = _repo(tmp_path)
    monkeypatch.setattr(manifest, "PROJECT_ROOT", repo)
    assert manifest.git_info().dirty is False
    (repo / "data/results/m/full/tables/t.md").write_text("v2\n")
    (repo / "figures/m/f.svg").write_text("v2\n")
    assert manifest.git_info().dirty is False
    (repo / "code.py").write_text("v2\n")
    assert manifest.git_info().dirty is True


def test_a_worktree_whose_venv_tools_and_datasets_are_symlinks_is_clean(tmp_path, monkeypatch):
    """A long sitting runs from a second worktree of a fixed commit, its .venv, .tools and datasets
    symlinked to the main checkout: the project's own ignore rules keep those out of "dirty"."""
    from pglimits_core.config import PROJECT_ROOT

    repo = _repo(tmp_path / "repo")
    (repo / ".gitignore").write_text((PROJECT_ROOT / ".gitignore").read_text())
    subprocess.run(["git", "add", ".gitignore"], cwd=repo, check=True, capture_output=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "ignore"],
                   cwd=repo, check=True, capture_output=True)
    elsewhere = tmp_path / "main"
    for name in (".venv", ".tools", "datasets"):
        (elsewhere / name).mkdir(parents=True)
    (repo / ".venv").symlink_to(elsewhere / ".venv")
    (repo / ".tools").symlink_to(elsewhere / ".tools")
    (repo / "data" / "datasets").symlink_to(elsewhere / "datasets")
    monkeypatch.setattr(manifest, "PROJECT_ROOT", repo)
    assert manifest.git_info().dirty is False
