# shellcheck shell=bash
# The processes of a plane this machine runs (hack/cluster-up.sh, hack/test-cluster.sh): started in
# their own sessions, watched while the plane waits, stopped in the caller's order. Sourced; the
# caller defines log and die and sets LOGS (one NAME.log per process) and, optionally, RUN (one
# NAME.pid per process: a process restarted since, by hand or by a test, records its new pid
# there and is stopped by that).

declare -A pids=()

# start NAME COMMAND... runs a process in its own session, so a Ctrl-C reaches only the script,
# which then stops the processes in order. fd 9 (a caller's flock) is not handed down.
start() {
  local name=$1; shift
  setsid "$@" >"${LOGS}/${name}.log" 2>&1 9>&- &
  pids[${name}]=$!
  if [[ -n "${RUN:-}" ]]; then echo "$!" >"${RUN}/${name}.pid"; fi
}

# stop NAME: SIGTERM, up to 30 s, then SIGKILL.
stop() {
  local name=$1 pid=${pids[$1]:-}
  # An explicit status: a bare return in a trap handler returns the status the trap began with.
  [[ -z "${pid}" ]] && return 0
  [[ -n "${RUN:-}" && -s "${RUN}/${name}.pid" ]] && pid=$(<"${RUN}/${name}.pid")
  if kill -0 "${pid}" 2>/dev/null; then
    kill -TERM "${pid}" 2>/dev/null || true
    for _ in $(seq 300); do kill -0 "${pid}" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "${pid}" 2>/dev/null; then
      log "${name} did not stop in 30s; killing it"
      kill -KILL "${pid}" 2>/dev/null || true
    fi
  fi
  wait "${pid}" 2>/dev/null || true
  unset "pids[$1]"
}

# failure NAME: the line of NAME's log that says why it failed (the last error, else the last line).
failure() {
  local line
  line=$(grep -a 'address already in use' "${LOGS}/$1.log" 2>/dev/null | tail -n 1)
  [[ -n "${line}" ]] || line=$(grep -aiE 'error|fatal|panic|failed' "${LOGS}/$1.log" 2>/dev/null | tail -n 1)
  [[ -n "${line}" ]] || line=$(tail -n 1 "${LOGS}/$1.log" 2>/dev/null)
  echo "${line:0:400}"
}

# wait_for WHAT SECONDS COMMAND...: until COMMAND succeeds; dies naming a process that exits
# meanwhile (with its log line), or after SECONDS.
wait_for() {
  local what=$1 seconds=$2 name; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    for name in "${!pids[@]}"; do
      kill -0 "${pids[${name}]}" 2>/dev/null ||
        die "${name} exited while waiting for ${what}: $(failure "${name}") (log: ${LOGS}/${name}.log)"
    done
    ((SECONDS < deadline)) || die "timed out after ${seconds}s waiting for ${what}; logs in ${LOGS}"
    sleep 0.2
  done
}
