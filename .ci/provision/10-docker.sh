# Provision the sandbox backends for the tests (sourced by .ci/run as root, set -euo pipefail):
# Debian's docker.io engine (started here when not running), bubblewrap, debootstrap, a
# dedicated non-root uid for the bwrap backend, and the locally built Python base image
# (no registry is reachable in CI). Idempotent: every step checks before it acts.

_kryt_apt_missing=()
# python3-venv: dev.py setup below creates the project's virtualenv.
for _pkg in docker.io bubblewrap debootstrap python3-venv; do
  dpkg-query -W -f='${Status}' "$_pkg" 2>/dev/null | grep -q "install ok installed" \
    || _kryt_apt_missing+=("$_pkg")
done
if [ "${#_kryt_apt_missing[@]}" -gt 0 ]; then
  echo "installing: ${_kryt_apt_missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${_kryt_apt_missing[@]}" >/dev/null
fi

# The Debian package's own docker client lives in /usr/bin; use it even when another
# client shadows it on PATH.
_kryt_docker=/usr/bin/docker
[ -x "$_kryt_docker" ] || _kryt_docker="$(command -v docker)"

if ! "$_kryt_docker" info >/dev/null 2>&1; then
  echo "starting dockerd in the background (log: /var/log/kryt-dockerd.log)"
  nohup dockerd >/var/log/kryt-dockerd.log 2>&1 &
  for _i in $(seq 1 60); do
    "$_kryt_docker" info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! "$_kryt_docker" info >/dev/null 2>&1; then
    echo "dockerd did not answer within 60 s; last log lines:" >&2
    tail -n 30 /var/log/kryt-dockerd.log >&2 || true
    return 1
  fi
fi

# The bwrap backend refuses to run bots as root (a fork bomb as root reached 32k processes).
if ! id -u kryt-sandbox >/dev/null 2>&1; then
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin kryt-sandbox
fi
export KRYT_SANDBOX_USER=kryt-sandbox

# The locally built base image (debootstrap + Debian python3 + offline wheels + this project),
# cached by a hash of its inputs. Built with the project's virtualenv (the one the test
# command uses next) so the wheel pins, and hence the tag, match what the tests compute.
python3 dev.py setup
.venv/bin/python -m sandbox.base_image build
KRYT_SANDBOX_BASE_IMAGE="$(.venv/bin/python -m sandbox.base_image --print-tag)"
export KRYT_SANDBOX_BASE_IMAGE
echo "sandbox base image: $KRYT_SANDBOX_BASE_IMAGE"

# The other runtimes' images (node, java, cpp, go, native; docs/sandbox.md "Runtimes"), each
# built once and cached by a hash of its inputs like the base image. Downloaded .debs are
# shared between them. node's gRPC packages come from npm (Debian's npm when the host has none).
if ! command -v npm >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends npm >/dev/null
fi
export KRYT_DEBOOTSTRAP_CACHE=/var/cache/kryt-debootstrap
.venv/bin/python -m sandbox.runtimes build node java cpp go native

# The bwrap backend runs those runtimes in a read-only copy of each image's file system
# (sandbox/runtimes/rootfs.py): made once here, so no test pays for the export.
.venv/bin/python -m sandbox.runtimes rootfs
