# Idempotent helpers that install (from Debian's packages) and start the services the test suite needs.
# Sourced by .ci/run and usable by hand: `source .ci/services.sh && ensure_all`.

apt_updated=0
apt_install() {
  if [ "$apt_updated" = 0 ]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

wait_port() { # host port seconds
  for _ in $(seq 1 "$3"); do
    if (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; then return 0; fi
    sleep 1
  done
  echo "service on $1:$2 did not come up within $3s" >&2
  return 1
}

ensure_postgres() {
  if ! command -v pg_ctlcluster >/dev/null; then
    apt_install postgresql
  fi
  if ! pg_isready -q -h 127.0.0.1 -p 5432; then
    local version
    version=$(ls /etc/postgresql | sort -V | tail -1)
    # Tests connect as postgres over loopback without a password, as on the project's machines.
    local hba="/etc/postgresql/$version/main/pg_hba.conf"
    if ! grep -q '^host all all 127.0.0.1/32 trust' "$hba"; then
      sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
    fi
    pg_ctlcluster --skip-systemctl-redirect "$version" main start
  fi
  wait_port 127.0.0.1 5432 60
  echo "postgres: $(psql -h 127.0.0.1 -U postgres -Atc 'show server_version')"
}

ensure_rabbitmq() {
  if ! command -v rabbitmq-server >/dev/null; then
    apt_install rabbitmq-server
  fi
  if ! (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; then
    rabbitmq-server -detached || service rabbitmq-server start
  fi
  wait_port 127.0.0.1 5672 120
  rabbitmqctl await_startup >/dev/null 2>&1 || true
  # The management plugin starts without a node restart; its HTTP API serves queue depths.
  if ! (exec 3<>/dev/tcp/127.0.0.1/15672) 2>/dev/null; then
    rabbitmq-plugins enable rabbitmq_management >/dev/null
  fi
  wait_port 127.0.0.1 15672 60
  echo "rabbitmq: $(rabbitmqctl version 2>/dev/null || echo up)"
}

# Debian's Chromium, and its headless shell, which the browser tests prefer: the same Chromium without the browser's
# UI layer, for 20-30 % less CPU (tests/e2e/support/chromium.ts).
ensure_chromium() {
  [ -x /usr/bin/chromium ] || apt_install chromium
  [ -x /usr/bin/chromium-headless-shell ] || apt_install chromium-headless-shell || echo "chromium: no headless shell, the full browser runs the tests" >&2
  echo "chromium: $(/usr/bin/chromium --version 2>/dev/null | head -1); headless shell: $([ -x /usr/bin/chromium-headless-shell ] && echo yes || echo no)"
}

ensure_nats() {
  if ! command -v nats-server >/dev/null; then
    apt_install nats-server
  fi
  if ! (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
    mkdir -p /var/lib/nats-server
    start-stop-daemon --start --oknodo --background --exec "$(command -v nats-server)" -- \
      -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
  fi
  wait_port 127.0.0.1 4222 30
  echo "nats: $(nats-server --version 2>/dev/null || echo up)"
}

ensure_all() { ensure_postgres; ensure_rabbitmq; ensure_nats; ensure_chromium; }
