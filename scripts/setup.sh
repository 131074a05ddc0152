#!/usr/bin/env bash
# Set up everything Thousand Arena needs on a fresh Debian/Ubuntu machine (idempotent).
#   scripts/setup.sh          the Python environment (.venv) with the arena installed
#   scripts/setup.sh --test   also the test tools: Prometheus, Node.js packages, the SDK,
#                             the compilers of the starter bots (C, Go, Java, Rust)
set -euo pipefail
cd "$(dirname "$0")/.."
want_test=0
[[ "${1:-}" == "--test" ]] && want_test=1

PY=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
# The arena depends on the bot SDK (the protocol stubs live there): both in one step, so
# pip takes the SDK from this checkout.
.venv/bin/python -m pip install -q -e sdk/python -e '.[dev]'

apt_install() {
  # Install Debian packages when missing (needs root or sudo).
  local missing=()
  for pkg in "$@"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
  [[ ${#missing[@]} -eq 0 ]] && return 0
  local sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

command -v redis-server >/dev/null || apt_install redis-server
# Hosted bots: the sandbox (bubblewrap), libseccomp for its filter, the host's python3 and
# Node.js for the runtimes, and the Node starter bot's packages.
command -v bwrap >/dev/null || apt_install bubblewrap
apt_install libseccomp2 python3
command -v node >/dev/null || apt_install nodejs npm
if [[ -f sdk/javascript/package.json ]] && [[ ! -d sdk/javascript/node_modules/@grpc/grpc-js ]]; then
  (cd sdk/javascript && { [[ -f package-lock.json ]] && npm ci --silent --no-audit --no-fund || npm install --silent --no-audit --no-fund; })
fi
.venv/bin/arena runtimes install --if-stale >/dev/null

if [[ $want_test -eq 1 ]]; then
  if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
    apt_install prometheus
    # The package may start a system Prometheus on :9090; the tests start their own.
    pkill -x prometheus 2>/dev/null || true
  fi
  command -v node >/dev/null || apt_install nodejs npm
  # The multi-host tests (tests/hosts) make hosts out of network namespaces (iproute2), give
  # the data host a PostgreSQL of its own and sign certificates with openssl.
  command -v ip >/dev/null || apt_install iproute2
  command -v openssl >/dev/null || apt_install openssl
  compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || apt_install postgresql
  # The web tests drive a real headless Chromium through its driver.
  { [[ -x /usr/bin/chromium ]] && [[ -x /usr/bin/chromedriver ]]; } || apt_install chromium chromium-driver fonts-dejavu-core
  # The starter bots of sdk/starters are built with their languages' own compilers, from
  # Debian packages (Rust: a rustup install in ~/.cargo/bin serves as well).
  command -v cc >/dev/null || apt_install gcc libc6-dev
  command -v go >/dev/null || apt_install golang-go
  { command -v javac >/dev/null && command -v java >/dev/null; } || apt_install default-jdk-headless
  { command -v cargo >/dev/null || [[ -x "$HOME/.cargo/bin/cargo" ]]; } || apt_install rustc cargo
  if [[ -f sdk/javascript/package.json ]]; then
    (cd sdk/javascript && { [[ -f package-lock.json ]] && npm ci --silent --no-audit --no-fund || npm install --silent --no-audit --no-fund; })
  fi
fi
