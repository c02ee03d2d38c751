# shellcheck shell=bash
# Provision a local PostgreSQL server for the database tests (sourced by .ci/run as root on
# Debian 12, with `set -euo pipefail` active). Idempotent: re-running finds the package
# installed, the cluster running and the role present, and only re-exports the URL.
#
# Exports KRYT_TEST_POSTGRES_URL. The role may create databases, because each test run makes
# its own throwaway database so parallel pytest-xdist workers never collide.

kryt_pg_role="kryt"
kryt_pg_password="kryt-test"
kryt_pg_port="${KRYT_PG_PORT:-5432}"

if ! command -v pg_lsclusters >/dev/null 2>&1 || ! dpkg -s postgresql >/dev/null 2>&1; then
  echo "installing postgresql"
  DEBIAN_FRONTEND=noninteractive apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql
fi

# Debian's package creates a "main" cluster; make one if a minimal image skipped that step.
kryt_pg_version="$(pg_lsclusters -h | awk 'NR==1 {print $1}')"
if [ -z "$kryt_pg_version" ]; then
  kryt_pg_version="$(ls /usr/lib/postgresql | sort -V | tail -n 1)"
  pg_createcluster "$kryt_pg_version" main --port "$kryt_pg_port"
fi
kryt_pg_cluster="$(pg_lsclusters -h | awk -v v="$kryt_pg_version" '$1 == v {print $2; exit}')"
kryt_pg_port="$(pg_lsclusters -h | awk -v v="$kryt_pg_version" -v c="$kryt_pg_cluster" \
  '$1 == v && $2 == c {print $3; exit}')"

if ! pg_lsclusters -h | awk -v v="$kryt_pg_version" -v c="$kryt_pg_cluster" \
  '$1 == v && $2 == c && $4 == "online" {found = 1} END {exit !found}'; then
  echo "starting PostgreSQL cluster $kryt_pg_version/$kryt_pg_cluster"
  pg_ctlcluster "$kryt_pg_version" "$kryt_pg_cluster" start
fi

# Wait until the server accepts connections (start returns before it is always ready).
for _ in $(seq 1 30); do
  if su postgres -c "pg_isready -q -h 127.0.0.1 -p $kryt_pg_port"; then
    break
  fi
  sleep 1
done
su postgres -c "pg_isready -h 127.0.0.1 -p $kryt_pg_port"

# Create the role (CREATEDB for per-run test databases) and a default database, once.
if [ "$(su postgres -c "psql -p $kryt_pg_port -tAc \"SELECT 1 FROM pg_roles WHERE rolname = '$kryt_pg_role'\"")" != "1" ]; then
  su postgres -c "psql -p $kryt_pg_port -v ON_ERROR_STOP=1 -c \"CREATE ROLE $kryt_pg_role LOGIN CREATEDB PASSWORD '$kryt_pg_password'\""
fi
if [ "$(su postgres -c "psql -p $kryt_pg_port -tAc \"SELECT 1 FROM pg_database WHERE datname = '$kryt_pg_role'\"")" != "1" ]; then
  su postgres -c "createdb -p $kryt_pg_port -O $kryt_pg_role $kryt_pg_role"
fi

export KRYT_TEST_POSTGRES_URL="postgresql+psycopg://$kryt_pg_role:$kryt_pg_password@127.0.0.1:$kryt_pg_port/$kryt_pg_role"
echo "PostgreSQL ready: KRYT_TEST_POSTGRES_URL=postgresql+psycopg://$kryt_pg_role:***@127.0.0.1:$kryt_pg_port/$kryt_pg_role"
unset kryt_pg_role kryt_pg_password kryt_pg_port kryt_pg_version kryt_pg_cluster
