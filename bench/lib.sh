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

# wait_for FILE REGEX: prints the first capture of REGEX once FILE has it
# (30s at most).
wait_for() {
	local i
	for i in $(seq 300); do
		if grep -qE "$2" "$1" 2>/dev/null; then
			sed -nE "s#.*$2.*#\\1#p" "$1" | head -n1
			return 0
		fi
		sleep 0.1
	done
	echo "bench: timed out waiting for $1 to match $2" >&2
	cat "$1" "${1%.out}.err" >&2 2>/dev/null || true
	return 1
}
