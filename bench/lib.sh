# bench/lib.sh: helpers sourced by bench scripts that start servers.
#
# bench_start sets work (a temporary directory) and pids (processes to
# kill), kills those and removes work on exit, and starts a watchdog that
# ends the script after BENCH_TIMEOUT seconds. The watchdog's sleep must
# not outlive the script (it would hold a pipe on its stdout open), so the
# watchdog kills it when it is killed.
bench_start() {
	work=$(mktemp -d)
	pids=()
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	(
		trap 'kill "$s" 2>/dev/null; exit 0' TERM
		sleep "$BENCH_TIMEOUT" >/dev/null 2>&1 &
		s=$!
		wait "$s"
		echo "bench: watchdog: still running after ${BENCH_TIMEOUT}s, giving up" >&2
		kill -TERM $$
	) &
	pids+=($!)
}

bench_cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}

# wait_for FILE REGEX [PID]: prints the first capture of REGEX once FILE has
# it; fails after WAIT_SECONDS (default 30), or as soon as process PID (when
# given) has exited. The process's FILE.err (or, for FILE ending in "out",
# its "err") is shown on failure.
wait_for() {
	local i err=${1%.out}.err
	[ "${1%out}" != "$1" ] && [ ! -e "$err" ] && err=${1%out}err
	for i in $(seq $((${WAIT_SECONDS:-30} * 10))); do
		if grep -qE "$2" "$1" 2>/dev/null; then
			sed -nE "s#.*$2.*#\\1#p" "$1" | head -n1
			return 0
		fi
		if [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null; then
			echo "bench: process $3 exited before $1 matched $2" >&2
			tail -5 "$1" "$err" >&2 2>/dev/null || true
			return 1
		fi
		sleep 0.1
	done
	echo "bench: timed out waiting for $1 to match $2" >&2
	tail -5 "$1" "$err" >&2 2>/dev/null || true
	return 1
}

# bench_pin sets SERVER_CPU and WRK_CPU, the command prefixes that pin
# servers to CPU 0 and the load generator to CPU 1 (empty with PIN=0, or
# without taskset or a second CPU).
bench_pin() {
	SERVER_CPU=() WRK_CPU=()
	if [ "${PIN:-1}" = 1 ] && command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then
		SERVER_CPU=(taskset -c 0) WRK_CPU=(taskset -c 1)
	fi
}

# free_port prints a free loopback TCP port (the kernel's choice for port 0,
# let go at once: a server started on it right after gets it, unless another
# process took it meanwhile, which a server's failure to start then shows).
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

# wait_port PORT [NAME [PID]]: waits until something answers HTTP on
# 127.0.0.1:PORT, for up to WAIT_SECONDS (default 30), and ends the script
# (exit 1) when nothing does, at once when process PID (when given) has
# exited. NAME names the server in the message, which then shows the tail
# of its logs, $work/NAME.* (when work is set).
wait_port() {
	local i why="never answered"
	for i in $(seq $((${WAIT_SECONDS:-30} * 10))); do
		curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$1/" && return 0
		if [ -n "${3:-}" ] && ! kill -0 "$3" 2>/dev/null; then
			why="exited (PID $3) without answering"
			break
		fi
		sleep 0.1
	done
	echo "bench: ${2:-the server} $why on port $1" >&2
	if [ -n "${2:-}" ] && [ -n "${work:-}" ]; then tail -20 "$work/$2".* >&2 2>/dev/null || true; fi
	exit 1
}

# lp_config SRC OUT PORT ADMIN DB [EDIT...]: writes OUT, the listingproxy
# configuration SRC (the repository's config.yaml, an older revision's, or
# one of testdata's) with the rewrites every benchmark makes: listen on
# 127.0.0.1:PORT, admin_listen on 127.0.0.1:ADMIN (a port) or "off", the
# SQLite demo database at DB ("-": SRC's backends as they are), logging at
# LOG_LEVEL (default error); then each EDIT, a sed s command of the
# script's own (cache size, TTL, a section to add). Each rewrite must find
# its line, or the script ends (exit 1) naming it: a rewrite that silently
# matched nothing would benchmark another configuration than the one the
# script says it does.
lp_config() {
	local src=$1 out=$2 port=$3 admin=$4 db=$5 e
	shift 5
	[ "$admin" = off ] || admin=127.0.0.1:$admin
	local edits=(
		"s|^listen: \"[^\"]*\"|listen: \"127.0.0.1:$port\"|"
		"s|^admin_listen: \"[^\"]*\"|admin_listen: \"$admin\"|"
		"s|^\(  level:\).*|\1 ${LOG_LEVEL:-error}|"
	)
	[ "$db" = - ] || edits+=("s|\"file:listingproxy-demo.db\"|\"file:$db\"|")
	edits+=("$@")
	cp "$src" "$out" || exit 1
	for e in "${edits[@]}"; do
		case $e in
		s*) ;;
		*) echo "bench: lp_config: '$e' is not a sed s command" >&2; exit 1 ;;
		esac
		if [ -z "$(sed -n "${e}p" "$out")" ]; then
			echo "bench: lp_config: '$e' matches no line of $src" >&2
			exit 1
		fi
		sed -i "$e" "$out" || exit 1
	done
}

# secs DURATION: prints DURATION, a number of whole seconds, minutes or
# hours as a Go duration says it (90s, 10m, 2h; a bare number is seconds),
# in seconds; fails, printing nothing, on anything else (1m30s, 0.5s).
secs() {
	[[ $1 =~ ^([0-9]+)(s|m|h)?$ ]] || return 1
	case ${BASH_REMATCH[2]} in
	m) echo $((BASH_REMATCH[1] * 60)) ;;
	h) echo $((BASH_REMATCH[1] * 3600)) ;;
	*) echo "${BASH_REMATCH[1]}" ;;
	esac
}
