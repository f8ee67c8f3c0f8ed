#!/usr/bin/env bash
# cluster.sh up|down|status|kill NODE|start NODE|restart NODE — contactd on several processes, on loopback:
#
#   HAProxy :BASE ─┬─ serve1 :BASE+1 ─┐
#                  └─ serve2 :BASE+2 ─┼─ PostgreSQL :BASE+10
#                     worker1, worker2 ┘   Redis :BASE+11 (the shared rate limits)
#
# PostgreSQL is three nodes (CLUSTER_HA=0: one, as drawn above), managed by pg_auto_failover
# (Debian's postgresql-15-auto-failover; docs/decisions/0002-postgresql-failover.md): its
# monitor on :BASE+10, the nodes pg1 pg2 pg3 on :BASE+12..14, one primary and two standbys
# with synchronous replication (a commit waits for one standby), and contactd reaches the
# primary through a multi-host URL with target_session_attrs=read-write. `kill pgN` kills a
# node's keeper and PostgreSQL with SIGKILL, as a lost machine; `start pgN` brings it back
# (it rejoins as a standby); `primary` prints the primary's node, `standbys` the standbys.
#
# Everything comes from Debian packages (haproxy, redis-server, postgresql) and bin/contactd.
# CLUSTER_DIR (default .cluster) holds the data, logs, pid files and cluster.env (the
# variables to run contactd commands against the cluster: `. .cluster/cluster.env`);
# CLUSTER_PORT (default 8800) is BASE. CONTACTD_* variables in the environment reach every
# contactd process (rate limits, worker counts...). `down` stops everything and keeps the
# data for the next `up`; `down --purge` deletes it too.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=${CLUSTER_DIR:-$ROOT/.cluster}
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
BASE=${CLUSTER_PORT:-8800}
PG_PORT=$((BASE + 10))
REDIS_PORT=$((BASE + 11))
STATS_PORT=$((BASE + 9))
CONTACTD=${CONTACTD_BIN:-$ROOT/bin/contactd}
NODES="serve1 serve2 worker1 worker2"
HA=${CLUSTER_HA-1} # replicated unless CLUSTER_HA is 0 or empty
[ "$HA" != 0 ] || HA=
MON_PORT=$PG_PORT
PG_NODES="pg1 pg2 pg3"

pg_bin() {
	if [ -n "${CONTACTD_PG_BIN:-}" ]; then echo "$CONTACTD_PG_BIN"; return; fi
	ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1
}

# as_postgres runs a PostgreSQL program as the postgres user when we are root (initdb and
# postgres refuse to run as root).
as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# alive NAME: its process runs (a killed one can linger as a zombie until init reaps it)
alive() {
	local st
	[ -f "$DIR/$1.pid" ] && st=$(ps -o stat= -p "$(cat "$DIR/$1.pid")" 2>/dev/null) && [ "${st:0:1}" != Z ]
}

# logged LOG COMMAND...: stderr to LOG.log, shown when the command fails
logged() {
	local log="$DIR/$1.log"
	shift
	"$@" 2>>"$log" || { echo "cluster: $* failed:" >&2; tail -5 "$log" >&2; return 1; }
}

not_alive() { ! alive "$1"; }

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_for() { # wait_for WHAT SECONDS COMMAND...
	local what=$1 secs=$2
	shift 2
	for _ in $(seq $((secs * 10))); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	echo "cluster: $what did not come up (logs in $DIR)" >&2
	return 1
}

logged_since() { tail -c +"$2" "$1" | grep -q "$3"; } # logged_since FILE BYTE TEXT

ready() { curl -fsS -o /dev/null "http://127.0.0.1:$1/readyz"; }

start_postgres() {
	local bin
	bin=$(pg_bin)
	mkdir -p "$DIR/pg"
	[ "$(id -u)" -ne 0 ] || chown postgres: "$DIR/pg"
	if [ ! -f "$DIR/pg/data/PG_VERSION" ]; then
		as_postgres "$bin/initdb" -D "$DIR/pg/data" -U postgres -A trust -E UTF8 --locale=C.UTF-8 \
			--no-sync --no-instructions >"$DIR/pg/initdb.log"
	fi
	if as_postgres "$bin/pg_ctl" -D "$DIR/pg/data" status >/dev/null 2>&1; then return; fi
	port_free "$PG_PORT" || { echo "cluster: port $PG_PORT (PostgreSQL) is taken" >&2; exit 1; }
	as_postgres "$bin/pg_ctl" -D "$DIR/pg/data" -l "$DIR/pg/postgres.log" -w -t 60 \
		-o "-p $PG_PORT -k $DIR/pg -c listen_addresses=127.0.0.1 -c max_connections=300" start >/dev/null
	"$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -qtAc "SELECT 1 FROM pg_database WHERE datname = 'contactd'" |
		grep -q 1 || "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U postgres -qc "CREATE DATABASE contactd"
}

# autoctl ARGS...: pg_auto_failover's command, as the postgres user, its configuration and
# state files under the cluster's directory
autoctl() {
	as_postgres env PATH="$(pg_bin):$PATH" XDG_CONFIG_HOME="$DIR/ha/config" XDG_DATA_HOME="$DIR/ha/state" pg_autoctl "$@"
}

pg_node_port() { echo $((BASE + 11 + ${1#pg})); }

monitor_sql() { "$(pg_bin)/psql" -h 127.0.0.1 -p "$MON_PORT" -U autoctl_node -d pg_auto_failover -qtAc "$1"; }

# nodes_in STATES COUNT: COUNT nodes report one of the states (a regular expression)
nodes_in() { [ "$(monitor_sql "SELECT count(*) FROM pgautofailover.node WHERE reportedstate::text ~ '^($1)$' AND goalstate = reportedstate")" -ge "$2" ]; }

# primary: the node the monitor made primary (a lost one keeps reporting primary, its goal
# is demoted)
primary() { monitor_sql "SELECT nodename FROM pgautofailover.node WHERE goalstate::text IN ('primary', 'wait_primary', 'single') ORDER BY nodeid LIMIT 1"; }

# run_keeper NAME PGDATA: pg_auto_failover's keeper of one node, in the background (it runs
# and watches its PostgreSQL, and takes its orders from the monitor)
# kill_in_dir DIR [SIGNAL]: SIGKILL (or SIGNAL) every process whose working directory is DIR
# (a PostgreSQL's processes all work in its data directory).
kill_in_dir() {
	local p dir
	dir=$(realpath "$1")
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/cwd" 2>/dev/null)" = "$dir" ] && kill "-${2:-KILL}" "${p#/proc/}" 2>/dev/null
	done
	return 0
}

run_keeper() {
	local as=()
	# setpriv execs (runuser would stay its parent): the pid file is the keeper's own
	[ "$(id -u)" -ne 0 ] || as=(setpriv --reuid=postgres --regid=postgres --init-groups)
	setsid "${as[@]}" env HOME="$DIR/ha" PATH="$(pg_bin):$PATH" XDG_CONFIG_HOME="$DIR/ha/config" XDG_DATA_HOME="$DIR/ha/state" \
		pg_autoctl run --pgdata "$2" >>"$DIR/$1.log" 2>&1 </dev/null &
	echo $! >"$DIR/$1.pid"
}

start_pg_node() {
	local node=$1 port
	port=$(pg_node_port "$node")
	if alive "$node"; then return; fi
	if [ ! -f "$DIR/ha/$node/PG_VERSION" ]; then
		port_free "$port" || { echo "cluster: port $port ($node) is taken" >&2; exit 1; }
		logged "$node" autoctl create postgres --pgdata "$DIR/ha/$node" --pgport "$port" --hostname 127.0.0.1 \
			--auth trust --no-ssl --name "$node" --pg-hba-lan \
			--monitor "postgres://autoctl_node@127.0.0.1:$MON_PORT/pg_auto_failover?sslmode=disable"
	fi
	run_keeper "$node" "$DIR/ha/$node"
}

start_ha_postgres() {
	command -v pg_autoctl >/dev/null || { echo "cluster: pg_autoctl is missing: scripts/ensure-auto-failover.sh" >&2; exit 1; }
	mkdir -p "$DIR/ha"
	[ "$(id -u)" -ne 0 ] || chown postgres: "$DIR/ha"
	if ! alive monitor; then
		if [ ! -f "$DIR/ha/monitor/PG_VERSION" ]; then
			port_free "$MON_PORT" || { echo "cluster: port $MON_PORT (monitor) is taken" >&2; exit 1; }
			logged monitor autoctl create monitor --pgdata "$DIR/ha/monitor" --pgport "$MON_PORT" --hostname 127.0.0.1 \
				--auth trust --no-ssl
		fi
		run_keeper monitor "$DIR/ha/monitor"
		wait_for "the monitor" 30 monitor_sql "SELECT 1"
		# a node that stops answering is failed over within seconds: checked every second,
		# unhealthy after 2 s, and the old primary given 2 s to step down (it cannot commit
		# anyway: its commits wait for a standby)
		"$(pg_bin)/psql" -h 127.0.0.1 -p "$MON_PORT" -U postgres -d pg_auto_failover -q \
			-c "ALTER SYSTEM SET pgautofailover.health_check_period = 1000" \
			-c "ALTER SYSTEM SET pgautofailover.health_check_timeout = 1000" \
			-c "ALTER SYSTEM SET pgautofailover.health_check_max_retries = 1" \
			-c "ALTER SYSTEM SET pgautofailover.health_check_retry_delay = 500" \
			-c "ALTER SYSTEM SET pgautofailover.node_considered_unhealthy_timeout = 2000" \
			-c "ALTER SYSTEM SET pgautofailover.primary_demote_timeout = 2000" \
			-c "SELECT pg_reload_conf()" >/dev/null
	fi
	local n=0 node
	for node in $PG_NODES; do
		n=$((n + 1))
		if [ -f "$DIR/ha/$node/PG_VERSION" ]; then
			# kept data: every node starts before any is waited for, since after all of them
			# stopped the monitor elects a primary from the positions they all report
			start_pg_node "$node"
			continue
		fi
		start_pg_node "$node"
		# one at a time: each new node copies the primary (pg_basebackup)
		wait_for "$node" 120 nodes_in "single|primary|secondary" "$n"
	done
	wait_for "PostgreSQL's three nodes" 120 nodes_in "primary|secondary" 3
	local url
	url=$(ha_url postgres)
	"$(pg_bin)/psql" "$url" -qtAc "SELECT 1 FROM pg_database WHERE datname = 'contactd'" | grep -q 1 ||
		"$(pg_bin)/psql" "$url" -qc "CREATE DATABASE contactd"
}

ha_url() { # ha_url DB: every node, the primary chosen by the client
	local hosts="" node
	for node in $PG_NODES; do hosts="$hosts${hosts:+,}127.0.0.1:$(pg_node_port "$node")"; done
	echo "postgres://postgres@$hosts/$1?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
}

start_redis() {
	if alive redis; then return; fi
	port_free "$REDIS_PORT" || { echo "cluster: port $REDIS_PORT (Redis) is taken" >&2; exit 1; }
	redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$DIR" \
		--daemonize yes --pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log"
	wait_for Redis 5 redis-cli -p "$REDIS_PORT" ping
}

write_env() {
	[ -f "$DIR/secret-key" ] || (umask 077 && head -c 32 /dev/urandom | base64 >"$DIR/secret-key")
	local url=postgres://postgres@127.0.0.1:$PG_PORT/contactd?sslmode=disable
	[ -z "$HA" ] || url=$(ha_url contactd)
	cat >"$DIR/cluster.env" <<-ENV
		export DATABASE_URL='$url'
		export CONTACTD_SECRET_KEY_FILE=$DIR/secret-key
		export CONTACTD_REDIS_URL=redis://127.0.0.1:$REDIS_PORT/0
		export CLUSTER_URL=http://127.0.0.1:$BASE
		export CLUSTER_SERVE1=http://127.0.0.1:$((BASE + 1))
		export CLUSTER_SERVE2=http://127.0.0.1:$((BASE + 2))
	ENV
}

# start_node NODE starts one contactd process (again, after a kill) and waits until it is up.
start_node() {
	local node=$1 port
	if alive "$node"; then return; fi
	# shellcheck disable=SC1091
	. "$DIR/cluster.env"
	export CONTACTD_LOG_FORMAT=${CONTACTD_LOG_FORMAT:-json}
	# the cluster is for trying contactd on one machine: receivers on loopback are allowed
	export CONTACTD_WEBHOOK_ALLOW_HTTP=${CONTACTD_WEBHOOK_ALLOW_HTTP:-true}
	export CONTACTD_WEBHOOK_ALLOWED_NETWORKS=${CONTACTD_WEBHOOK_ALLOWED_NETWORKS:-127.0.0.0/8}
	# HAProxy says who the client is (X-Forwarded-For): key IP allow-lists and consent records
	export CONTACTD_TRUSTED_PROXIES=${CONTACTD_TRUSTED_PROXIES:-127.0.0.1/32}
	# a stopping serve answers /readyz with 503 while serving on until HAProxy's checks (every
	# 250 ms, DOWN after 2) have taken it out: the third check it fails comes only once HAProxy
	# acted on the second, however slow the machine; 10 s at most
	export CONTACTD_SHUTDOWN_DRAIN=${CONTACTD_SHUTDOWN_DRAIN:-10s}
	export CONTACTD_SHUTDOWN_DRAIN_CHECKS=${CONTACTD_SHUTDOWN_DRAIN_CHECKS:-3}
	case $node in
	serve1 | serve2)
		port=$((BASE + ${node#serve}))
		port_free "$port" || { echo "cluster: port $port ($node) is taken" >&2; exit 1; }
		setsid "$CONTACTD" serve --addr "127.0.0.1:$port" --public-url "http://127.0.0.1:$BASE" \
			>>"$DIR/$node.log" 2>&1 </dev/null &
		echo $! >"$DIR/$node.pid"
		wait_for "$node" 30 ready "$port"
		;;
	worker1 | worker2)
		local since
		since=$(($(stat -c %s "$DIR/$node.log" 2>/dev/null || echo 0) + 1))
		setsid "$CONTACTD" worker >>"$DIR/$node.log" 2>&1 </dev/null &
		echo $! >"$DIR/$node.pid"
		wait_for "$node" 30 logged_since "$DIR/$node.log" "$since" "workers running"
		;;
	*) echo "cluster: no node $node (one of: $NODES)" >&2; exit 2 ;;
	esac
}

start_haproxy() {
	if alive haproxy; then return; fi
	port_free "$BASE" || { echo "cluster: port $BASE (HAProxy) is taken" >&2; exit 1; }
	# A dead node's connections fail at once and are retried on the other node (retry-on
	# conn-failure never resends a request a node may have received); health checks on
	# /readyz take a node out within a second and back when it is ready again. A dead node
	# refuses the check's connection at once, so the check's answer may take its time: without
	# "timeout check" HAProxy gives it only "inter" (250 ms), and a busy machine's live node
	# was marked DOWN beside the dead one (every request then 503, "no server is available").
	cat >"$DIR/haproxy.cfg" <<-CFG
		global
		    maxconn 4096
		    log stderr format short local0 notice
		defaults
		    mode http
		    log global
		    option httplog
		    option dontlognull
		    timeout connect 1s
		    timeout check 5s
		    timeout client 60s
		    timeout server 60s
		    retries 3
		    option redispatch 1
		    retry-on conn-failure
		frontend api
		    bind 127.0.0.1:$BASE
		    option forwardfor
		    default_backend contactd
		backend contactd
		    balance roundrobin
		    option httpchk GET /readyz
		    default-server check inter 250ms fall 2 rise 2
		    server serve1 127.0.0.1:$((BASE + 1))
		    server serve2 127.0.0.1:$((BASE + 2))
		listen stats
		    bind 127.0.0.1:$STATS_PORT
		    stats enable
		    stats uri /
	CFG
	haproxy -c -q -f "$DIR/haproxy.cfg"
	haproxy -D -p "$DIR/haproxy.pid" -f "$DIR/haproxy.cfg" 2>>"$DIR/haproxy.log"
	wait_for HAProxy 10 ready "$BASE"
}

# same_mode: a cluster's data is kept between ups, and its API key with it: the data of one
# PostgreSQL and of the replicated three are apart, so an up in the other mode is refused
same_mode() {
	local want=single
	[ -z "$HA" ] || want=replicated
	if [ -f "$DIR/mode" ] && [ "$(cat "$DIR/mode")" != "$want" ]; then
		echo "cluster: $DIR holds the data of a cluster with $(cat "$DIR/mode") PostgreSQL: start it $([ -n "$HA" ] && echo with CLUSTER_HA=0 || echo without CLUSTER_HA=0), or delete it first (make cluster-down PURGE=1)" >&2
		exit 1
	fi
	echo "$want" >"$DIR/mode"
}

up() {
	[ -x "$CONTACTD" ] || { echo "cluster: $CONTACTD is missing: run make build" >&2; exit 1; }
	same_mode
	if [ -n "$HA" ]; then start_ha_postgres; else start_postgres; fi
	start_redis
	write_env
	# shellcheck disable=SC1091
	. "$DIR/cluster.env"
	logged setup "$CONTACTD" migrate
	if [ ! -s "$DIR/api-key" ]; then
		"$CONTACTD" accounts create --name demo >/dev/null 2>>"$DIR/setup.log" || true
		(umask 077 && logged setup "$CONTACTD" keys create --account demo --name cluster >"$DIR/api-key")
	fi
	for node in $NODES; do start_node "$node"; done
	start_haproxy
	cat <<-MSG
		contactd cluster up: HAProxy $CLUSTER_URL -> serve1 $CLUSTER_SERVE1, serve2 $CLUSTER_SERVE2;
		worker1, worker2; PostgreSQL 127.0.0.1:$PG_PORT${HA:+ (the pg_auto_failover monitor; nodes: scripts/cluster.sh primary)}; Redis 127.0.0.1:$REDIS_PORT; HAProxy stats http://127.0.0.1:$STATS_PORT/
		API key (account demo): $(cat "$DIR/api-key")
		try:   curl -H "x-api-key: \$(cat $DIR/api-key)" $CLUSTER_URL/public/v1/contacts
		admin: . $DIR/cluster.env && bin/contactd keys list --account demo
		logs:  $DIR/*.log        stop: make cluster-down
	MSG
}

stop_pid() { # stop_pid NAME [SECONDS]: TERM, then KILL after SECONDS (10)
	alive "$1" || { rm -f "$DIR/$1.pid"; return 0; }
	local pid
	pid=$(cat "$DIR/$1.pid")
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq $((${2:-10} * 10))); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	# its process group too: a pg_auto_failover keeper's services and PostgreSQL
	kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
	rm -f "$DIR/$1.pid"
}

down() {
	stop_pid haproxy
	for node in $NODES; do stop_pid "$node"; done
	stop_pid redis
	for node in $PG_NODES monitor; do stop_pid "$node"; done
	if [ -f "$DIR/pg/data/PG_VERSION" ]; then
		as_postgres "$(pg_bin)/pg_ctl" -D "$DIR/pg/data" -m fast -w stop >/dev/null 2>&1 || true
	fi
	if [ "${1:-}" = "--purge" ]; then rm -rf "$DIR"; echo "contactd cluster stopped and deleted"; else
		echo "contactd cluster stopped (data kept in $DIR; make cluster-down PURGE=1 deletes it)"
	fi
}

status() {
	local ha=""
	[ -z "$HA" ] || ha="monitor $PG_NODES"
	for p in haproxy $NODES redis $ha; do
		if alive "$p"; then echo "$p running (pid $(cat "$DIR/$p.pid"))"; else echo "$p stopped"; fi
	done
	[ -n "$HA" ] || return 0
	# what replication looks like to the monitor and to each node (why a commit waits)
	echo "monitor's view:"
	monitor_sql "SELECT nodename, reportedstate, goalstate, reportedlsn, health, replicationquorum, candidatepriority, reporttime FROM pgautofailover.node ORDER BY nodeid" 2>&1 | sed 's/^/  /'
	local node
	for node in $PG_NODES; do
		alive "$node" || continue
		echo "$node:"
		"$(pg_bin)/psql" -h 127.0.0.1 -p "$(pg_node_port "$node")" -U postgres -d postgres -qtA -c "SELECT 'in recovery: ' || pg_is_in_recovery() || '; synchronous_standby_names: ' || current_setting('synchronous_standby_names')" \
			-c "SELECT 'sending to ' || application_name || ': ' || state || ', ' || sync_state || ', flushed ' || coalesce(flush_lsn::text, '-') FROM pg_stat_replication" \
			-c "SELECT 'receiving: ' || status || ' from ' || sender_host || ':' || sender_port || ', flushed ' || coalesce(flushed_lsn::text, '-') FROM pg_stat_wal_receiver" \
			-c "SELECT 'waiting on ' || wait_event || ': ' || count(*) FROM pg_stat_activity WHERE wait_event IS NOT NULL AND backend_type = 'client backend' GROUP BY wait_event" 2>&1 | sed 's/^/  /'
	done
}

case ${1:-} in
up) up ;;
down) down "${2:-}" ;;
status) status ;;
kill) # kill NODE: SIGKILL, as a crash would, and wait until it is gone
	alive "$2" || { echo "cluster: $2 is not running" >&2; exit 1; }
	case $2 in
	# a PostgreSQL node is lost whole: its keeper's process group, which holds the keeper's
	# services and its PostgreSQL (killing the keeper alone leaves its service that restarts
	# PostgreSQL, and the old primary comes back taking connections)
	# (and every process working in its data directory: the monitor's logger and health-check
	# worker run in sessions of their own, and would outlive the machine)
	pg[0-9] | monitor) kill -KILL -- "-$(cat "$DIR/$2.pid")"; kill_in_dir "$DIR/ha/$2" ;;
	*) kill -KILL "$(cat "$DIR/$2.pid")" ;;
	esac
	wait_for "$2's end" 5 not_alive "$2"
	;;
freeze | thaw) # freeze NODE: a PostgreSQL node stopped whole (SIGSTOP) as a machine that hangs
	# is: its keeper and PostgreSQL alive, answering nothing; thaw NODE resumes it (SIGCONT)
	case $2 in pg[0-9]) ;; *) echo "cluster: $1 takes a PostgreSQL node" >&2; exit 2 ;; esac
	alive "$2" || { echo "cluster: $2 is not running" >&2; exit 1; }
	sig=STOP
	[ "$1" = freeze ] || sig=CONT
	kill "-$sig" -- "-$(cat "$DIR/$2.pid")"
	kill_in_dir "$DIR/ha/$2" "$sig"
	;;
start)
	case $2 in
	pg[0-9]) start_pg_node "$2" ;;
	*) write_env && start_node "$2" ;;
	esac
	;;
restart) # restart NODE: stopped as an upgrade would (SIGTERM: drained), then started again
	# its drain (10 s at most) and its shutdown (requests and attempts in flight, 30 s) first
	stop_pid "$2" 45
	write_env && start_node "$2"
	;;
switchover) # switchover: pg_auto_failover promotes a standby and demotes the primary, as an
	# operator's planned maintenance does; returns once the monitor reports it done
	autoctl perform switchover --pgdata "$DIR/ha/monitor" --formation default --group 0 >>"$DIR/switchover.log" 2>&1
	;;
primary) primary ;;
replication) # replication NODE: its synchronous_standby_names, and how many standbys it streams to
	# synchronously (sync or quorum), as PostgreSQL itself reports them
	"$(pg_bin)/psql" -h 127.0.0.1 -p "$(pg_node_port "$2")" -U postgres -d postgres -qtA -F ' ' \
		-c "SELECT current_setting('synchronous_standby_names') <> '', count(*) FILTER (WHERE state = 'streaming' AND sync_state IN ('sync', 'quorum')) FROM pg_stat_replication"
	;;
recovery) # recovery NODE: t while the node's PostgreSQL is a standby (in recovery), f as a primary
	"$(pg_bin)/psql" -h 127.0.0.1 -p "$(pg_node_port "$2")" -U postgres -d postgres -qtAc "SELECT pg_is_in_recovery()"
	;;
standbys) monitor_sql "SELECT nodename FROM pgautofailover.node WHERE reportedstate::text = 'secondary' AND goalstate = reportedstate ORDER BY nodeid" ;;
*) echo "usage: $0 up | down [--purge] | status | kill NODE | freeze NODE | thaw NODE | start NODE | restart NODE | switchover | primary | replication NODE | recovery NODE | standbys   (NODE: $NODES, and monitor $PG_NODES unless CLUSTER_HA=0)" >&2; exit 2 ;;
esac
