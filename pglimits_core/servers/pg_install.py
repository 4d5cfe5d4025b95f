"""Obtaining PostgreSQL 16: the pgserver wheel's binaries, the pgmq extension, an OS user.

Postgres refuses to run as root, so when the project runs as root it creates an unprivileged
system user and runs initdb/postgres as that user. That user must be able to traverse every
directory down to the binaries and the data dir; where one is closed (e.g. /root is 0700) we
grant that single user traverse-only access with an ACL rather than opening it to everyone.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from pglimits_core.errors import PGLimitsError

PG_OS_USER = os.environ.get("PGLIMITS_PG_OS_USER", "pglimits")
PGMQ_CONTROL = """# pgmq, installed by PGLimits from the pgmq PyPI package's SQL
comment = 'A lightweight message queue. Like AWS SQS and RSMQ but on Postgres.'
default_version = '{version}'
relocatable = false
schema = 'pgmq'
trusted = true
"""


@dataclass(frozen=True)
class PgInstall:
    """Where the PostgreSQL binaries and extension files are."""

    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    @property
    def extension_dir(self) -> Path:
        return self.root / "share" / "postgresql" / "extension"

    def tool(self, name: str) -> str:
        return str(self.bin / name)

    def has_lz4(self) -> bool:
        out = subprocess.run([self.tool("pg_config"), "--configure"], capture_output=True, text=True)
        return "with-lz4" in out.stdout


def locate_install() -> PgInstall:
    # importing the wheel as root warns unless XDG_RUNTIME_DIR is set: give it a private dir
    from pglimits_core.config import state_dir

    runtime_dir = state_dir() / "runtime"
    runtime_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.environ.setdefault("XDG_RUNTIME_DIR", str(runtime_dir))
    try:
        import pgserver  # noqa: F401  (the wheel; we only use its binaries)
    except ImportError as exc:
        raise PGLimitsError("PostgreSQL binaries not installed (pgserver wheel missing)",
                            "run `make setup`") from exc
    import importlib.util

    spec = importlib.util.find_spec("pgserver")
    return PgInstall(Path(spec.origin).parent / "pginstall")


def pgmq_source() -> tuple[Path, str]:
    """The pgmq extension SQL shipped by the pgmq PyPI package, and its version."""
    import importlib.util

    spec = importlib.util.find_spec("pgmq")
    if spec is None:
        raise PGLimitsError("the pgmq package is missing", "run `make setup`")
    sql_dir = Path(spec.origin).parent / "sql"
    return sql_dir / "pgmq.sql", (sql_dir / "VERSION").read_text().strip()


def install_pgmq_extension(install: PgInstall) -> str:
    """Write pgmq.control + pgmq--VERSION.sql into the extension dir (idempotent)."""
    sql_path, version = pgmq_source()
    target = install.extension_dir / f"pgmq--{version}.sql"
    if not target.exists():
        shutil.copyfile(sql_path, target)
    (install.extension_dir / "pgmq.control").write_text(PGMQ_CONTROL.format(version=version))
    return version


def running_as_root() -> bool:
    return os.geteuid() == 0


def ensure_os_user() -> str | None:
    """The OS user Postgres runs as: None (ourselves) unless we are root."""
    if not running_as_root():
        return None
    try:
        pwd.getpwnam(PG_OS_USER)
    except KeyError:
        _run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin",
              PG_OS_USER], f"cannot create OS user {PG_OS_USER}")
    return PG_OS_USER


def chown_to(path: Path, user: str | None) -> None:
    if user:
        shutil.chown(path, user=user, group=pwd.getpwnam(user).pw_gid)


def grant_traverse(path: Path, user: str | None) -> None:
    """Make every ancestor of ``path`` traversable by ``user`` (traverse-only ACL if closed)."""
    if not user:
        return
    uid = pwd.getpwnam(user).pw_uid
    for directory in reversed(Path(path).resolve().parents):
        stat = directory.stat()
        if stat.st_mode & 0o001 or stat.st_uid == uid:
            continue
        if not shutil.which("setfacl"):
            raise PGLimitsError(f"{user} cannot reach {path}: {directory} is closed to it",
                                "apt-get install -y acl, or move the project out of that directory")
        _run(["setfacl", "-m", f"u:{user}:x", str(directory)],
             f"cannot grant {user} traverse access to {directory}")


def _run(argv: list[str], problem: str) -> None:
    result = subprocess.run(argv, capture_output=True, text=True)
    if result.returncode != 0:
        raise PGLimitsError(f"{problem}: {result.stderr.strip()}", "run the project as root or as the user that owns it")
