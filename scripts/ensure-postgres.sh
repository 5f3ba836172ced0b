#!/usr/bin/env bash
# Makes sure a PostgreSQL answers on 127.0.0.1:5432 with trust auth for user postgres: starts the
# local cluster when it is installed but stopped, installs it from Debian's packages when absent.
set -euo pipefail
ready() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
if command -v pg_isready >/dev/null && ready; then exit 0; fi
if ! command -v pg_ctlcluster >/dev/null; then
  echo "ensure-postgres: installing PostgreSQL from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq postgresql >/dev/null
fi
version=$(ls /etc/postgresql | sort -V | tail -n 1)
conf=/etc/postgresql/$version/main
# Tests connect over TCP as postgres without a password.
if ! grep -q "^host all all 127.0.0.1/32 trust" "$conf/pg_hba.conf"; then
  sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\nlocal all all trust' "$conf/pg_hba.conf"
fi
grep -q "^listen_addresses" "$conf/postgresql.conf" || echo "listen_addresses = '127.0.0.1'" >> "$conf/postgresql.conf"
grep -q "^max_connections = 300" "$conf/postgresql.conf" || echo "max_connections = 300" >> "$conf/postgresql.conf"
pg_ctlcluster --skip-systemctl-redirect "$version" main start || pg_ctlcluster --skip-systemctl-redirect "$version" main restart
for _ in $(seq 1 30); do ready && exit 0; sleep 1; done
echo "ensure-postgres: PostgreSQL did not come up" >&2
exit 1
