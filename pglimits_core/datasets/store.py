"""Datasets materialised once per spec under ``data_dir()/datasets/<kind>-<sha12>/``.

Build protocol (the one way), so a half-written dataset is never read as done:

1. generate in memory, write every file into a sibling ``.<name>.tmp-<pid>-<random>/``, fsync;
2. write ``manifest.json`` last (spec, counts, per-file sha256 and size);
3. ``os.replace`` the temporary directory onto the final name.

A directory under the final name therefore always holds a complete dataset. A build killed
before step 3 leaves only a temporary directory, which the next ``ensure_dataset`` of that spec
removes once its process is gone. Arrays are ``.npy`` (no pickle, loadable with
``np.load(..., mmap_mode="r")``), the vocabulary is UTF-8 text, queries are JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pglimits_core.config import data_dir
from pglimits_core.datasets import corpus, vectors
from pglimits_core.datasets.corpus import Corpus, CorpusSpec, Query
from pglimits_core.datasets.vectors import VectorSet, VectorSpec
from pglimits_core.errors import PGLimitsError
from pglimits_core.record.rundir import MIN_FREE_BYTES, atomic_write_bytes, ensure_free_space

MANIFEST = "manifest.json"
_TMP_MARK = ".tmp-"

Spec = CorpusSpec | VectorSpec
Payload = np.ndarray | bytes  # an array becomes a .npy file, bytes are written as they are


@dataclass(frozen=True)
class _Kind:
    """How one kind of dataset is generated, laid out in files, sized and counted."""

    name: str
    version: int
    generate: Callable[[Any], Any]
    files: Callable[[Any], dict[str, Payload]]
    estimated_bytes: Callable[[Any], int]
    counts: Callable[[Any], dict[str, Any]]


def _corpus_files(data: Corpus) -> dict[str, Payload]:
    queries = [q._asdict() for q in data.queries]
    return {"vocabulary.txt": ("\n".join(data.words.tolist()) + "\n").encode(),
            "tokens.npy": data.tokens, "doc_offsets.npy": data.doc_offsets,
            "document_frequencies.npy": data.document_frequencies,
            "queries.json": json.dumps(queries, indent=1).encode(),
            "truth_docs.npy": data.truth_docs, "truth_offsets.npy": data.truth_offsets}


def _corpus_bytes(spec: CorpusSpec) -> int:
    """An upper bound: longest documents, and every frequent query matching every document."""
    tokens = spec.documents * spec.length_range[1] * 4 + (spec.documents + 1) * 8
    words = spec.vocabulary * (corpus.MAX_WORD_LENGTH + 1 + 4)  # vocabulary.txt + frequencies
    return tokens + words + spec.queries_per_class * spec.documents * 4


def _corpus_counts(data: Corpus) -> dict[str, Any]:
    per_class = {name: sum(q.term_class == name for q in data.queries)
                 for name, _, _ in corpus.FREQUENCY_CLASSES}
    return {"documents": data.num_documents, "tokens": int(data.doc_offsets[-1]),
            "vocabulary": len(data.words), "queries": per_class,
            "truth_matches": int(data.truth_offsets[-1])}


def _vector_files(data: VectorSet) -> dict[str, Payload]:
    return {"base.npy": data.base, "queries.npy": data.queries,
            "truth_ids.npy": data.truth_ids, "truth_scores.npy": data.truth_scores}


def _vector_bytes(spec: VectorSpec) -> int:
    return (spec.count + spec.queries) * spec.dim * 4 + spec.queries * spec.k * 12 + 4096


def _vector_counts(data: VectorSet) -> dict[str, Any]:
    return {"count": len(data.base), "dim": data.base.shape[1], "queries": len(data.queries),
            "k": data.truth_ids.shape[1]}


_KINDS: dict[type, _Kind] = {
    CorpusSpec: _Kind("corpus", corpus.GENERATOR_VERSION, corpus.generate_corpus,
                      _corpus_files, _corpus_bytes, _corpus_counts),
    VectorSpec: _Kind("vectors", vectors.GENERATOR_VERSION, vectors.generate_vectors,
                      _vector_files, _vector_bytes, _vector_counts),
}


def _kind_of(spec: Spec) -> _Kind:
    try:
        return _KINDS[type(spec)]
    except KeyError:
        raise PGLimitsError(f"no dataset kind for {type(spec).__name__}",
                            "pass a CorpusSpec or a VectorSpec") from None


def dataset_id(spec: Spec) -> str:
    """``<kind>-<sha12>``: sha256 of the canonical JSON of kind, spec and generator version."""
    kind = _kind_of(spec)
    canonical = json.dumps({"kind": kind.name, "spec": asdict(spec),
                            "generator_version": kind.version},
                           sort_keys=True, separators=(",", ":"))
    return f"{kind.name}-{hashlib.sha256(canonical.encode()).hexdigest()[:12]}"


def dataset_dir(spec: Spec) -> Path:
    return data_dir() / "datasets" / dataset_id(spec)


def is_built(spec: Spec) -> bool:
    """A complete dataset of ``spec`` is on disk (``ensure_dataset`` would not generate)."""
    return _is_complete(dataset_dir(spec), spec)


def ensure_dataset(spec: Spec, progress: Callable[[str], None] | None = None) -> Path:
    """The directory of ``spec``'s dataset, built now unless a complete one is there."""
    say = progress or (lambda _message: None)
    final = dataset_dir(spec)
    if _is_complete(final, spec):
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_builds(final)
    if final.exists():  # only possible if damaged by hand: the protocol never leaves one
        say(f"{final.name}: incomplete, rebuilding")
        shutil.rmtree(final)
    _check_disk(spec, final)
    temporary = final.with_name(f".{final.name}{_TMP_MARK}{os.getpid()}-{secrets.token_hex(3)}")
    try:
        temporary.mkdir()
        _build_into(spec, temporary, say)
        _publish(temporary, final, spec)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return final


def _check_disk(spec: Spec, final: Path) -> None:
    need = _kind_of(spec).estimated_bytes(spec)
    try:  # headroom as for a run: the servers that load the dataset grow on the same disk
        ensure_free_space(final.parent, need + MIN_FREE_BYTES)
    except PGLimitsError as error:
        raise PGLimitsError(f"not enough disk for dataset {final.name} (writes up to "
                            f"{need / 2**30:.2f} GB + {MIN_FREE_BYTES / 2**30:.0f} GB headroom): "
                            f"{error.problem}", error.fix) from error


def _build_into(spec: Spec, directory: Path, say: Callable[[str], None]) -> None:
    """Generate ``spec`` and write its files, then its manifest, into ``directory``."""
    kind = _kind_of(spec)
    started = time.perf_counter()
    say(f"{kind.name}: generating {dataset_id(spec)}")
    data = kind.generate(spec)
    say(f"{kind.name}: writing and checksumming files")
    files = {name: _write_file(directory / name, payload)
             for name, payload in kind.files(data).items()}
    manifest = {"kind": kind.name, "generator_version": kind.version, "spec": asdict(spec),
                "counts": kind.counts(data), "files": files, "numpy_version": np.__version__,
                "build_seconds": round(time.perf_counter() - started, 3)}
    atomic_write_bytes(directory / MANIFEST, json.dumps(manifest, indent=2).encode())
    say(f"{kind.name}: built in {manifest['build_seconds']:.1f} s")


def _write_file(path: Path, payload: Payload) -> dict[str, Any]:
    """Write and fsync ``payload``; its size and sha256 as read back from disk."""
    with path.open("wb") as handle:
        if isinstance(payload, bytes):
            handle.write(payload)
        else:
            np.save(handle, payload, allow_pickle=False)
        handle.flush()
        os.fsync(handle.fileno())
    return {"bytes": path.stat().st_size, "sha256": _file_sha256(path)}


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _publish(temporary: Path, final: Path, spec: Spec) -> None:
    """Move the finished build onto its final name; a concurrent identical build may win."""
    try:
        os.replace(temporary, final)
    except OSError:
        if not _is_complete(final, spec):
            raise
        return
    _fsync_directory(final.parent)


def _fsync_directory(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _remove_stale_builds(final: Path) -> None:
    """Delete temporary directories of ``final`` whose building process no longer runs."""
    for leftover in final.parent.glob(f".{final.name}{_TMP_MARK}*"):
        pid_text = leftover.name.rsplit(_TMP_MARK, 1)[1].split("-", 1)[0]
        if not (pid_text.isdigit() and _process_alive(int(pid_text))):
            shutil.rmtree(leftover, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)  # signal 0: existence check only
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # alive, owned by another user
    return True


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads((Path(path) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None


def _is_complete(path: Path, spec: Spec) -> bool:
    """A manifest for exactly this spec, and every listed file present with its size (no hash:
    that is ``verify_dataset``, which reads every byte)."""
    manifest = _read_manifest(path)
    kind = _kind_of(spec)
    if not manifest or (manifest.get("kind"), manifest.get("generator_version"),
                        manifest.get("spec")) != (kind.name, kind.version, asdict(spec)):
        return False
    return all((path / name).is_file() and (path / name).stat().st_size == entry["bytes"]
               for name, entry in manifest.get("files", {}).items())


def _manifest_of_kind(path: Path, kind: str) -> dict[str, Any]:
    manifest = _read_manifest(path)
    if not manifest or manifest.get("kind") != kind:
        raise PGLimitsError(f"{path} is not a complete {kind} dataset (no {kind} manifest)",
                            "build it with datasets.store.ensure_dataset(spec)")
    return manifest


def _array(path: Path, name: str) -> np.ndarray:
    return np.load(path / name, mmap_mode="r", allow_pickle=False)


def load_corpus(path: Path) -> Corpus:
    """The corpus stored at ``path``; arrays are read-only memory maps."""
    path = Path(path)
    spec = CorpusSpec(**_manifest_of_kind(path, "corpus")["spec"])
    words = np.array((path / "vocabulary.txt").read_text("utf-8").split("\n")[:-1])
    queries = [Query(**q) for q in json.loads((path / "queries.json").read_text("utf-8"))]
    return Corpus(spec, words, _array(path, "tokens.npy"), _array(path, "doc_offsets.npy"),
                  _array(path, "document_frequencies.npy"), queries,
                  _array(path, "truth_docs.npy"), _array(path, "truth_offsets.npy"))


def load_vectors(path: Path) -> VectorSet:
    """The vector set stored at ``path``; arrays are read-only memory maps."""
    path = Path(path)
    spec = VectorSpec(**_manifest_of_kind(path, "vectors")["spec"])
    return VectorSet(spec, _array(path, "base.npy"), _array(path, "queries.npy"),
                     _array(path, "truth_ids.npy"), _array(path, "truth_scores.npy"))


def verify_dataset(path: Path) -> list[str]:
    """Problems with the dataset at ``path`` (empty when every file matches its manifest)."""
    path = Path(path)
    manifest = _read_manifest(path)
    if manifest is None:
        return [f"{path / MANIFEST}: missing or unreadable"]
    problems = []
    for name, entry in sorted(manifest.get("files", {}).items()):
        file = path / name
        if not file.is_file():
            problems.append(f"{name}: missing")
        elif file.stat().st_size != entry["bytes"]:
            problems.append(f"{name}: {file.stat().st_size} bytes, manifest says {entry['bytes']}")
        elif _file_sha256(file) != entry["sha256"]:
            problems.append(f"{name}: sha256 differs from the manifest")
    return problems
