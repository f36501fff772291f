#!/usr/bin/env bash
# Serve kvviz to a whole class: N `streamlit run app.py` replicas (default one per CPU core) behind Debian's
# nginx with sticky sessions (deploy/nginx.conf.template explains how). Runs in the foreground; Ctrl-C stops
# nginx and every replica. Nothing is installed or written outside the runtime directory: the class poll's votes
# too are kept there (poll.sqlite3) unless KVVIZ_POLL_DB names another store (give --run-dir to keep them across a
# restart).
#
#   deploy/run_class.sh                      # students open http://<this machine>:8500
#   deploy/run_class.sh -n 2 -p 8620         # 2 replicas on 8621 and 8622, nginx on 8620
#   deploy/run_class.sh --listen 127.0.0.1   # only this machine can connect
#
# Options: -n/--replicas N (1..32), -p/--port FRONT_PORT (1024..65535; replicas use FRONT_PORT+1 .. FRONT_PORT+N,
# all free), --listen ADDR (nginx's address: an IP address or a host name; default all interfaces), --run-dir DIR
# (config, pids, logs; letters, digits and . _ / + -; default a new /tmp/kvviz-class.XXXXXX). Environment: PYTHON
# (default .venv/bin/python), NGINX (default /usr/sbin/nginx), KVVIZ_SHARED (default 1 here: students' browsers may
# load only the bundled and listed models; docs/deploying.md), KVVIZ_POLL_DB (the poll's store, an SQLAlchemy URL;
# default sqlite:///RUN_DIR/poll.sqlite3).
set -euo pipefail
cd "$(dirname "$0")/.."

replicas=$(nproc)
front_port=8500
listen=0.0.0.0
run_dir=""
refuse() { echo "run_class.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    -n|--replicas|-p|--port|--listen|--run-dir)
      [ $# -ge 2 ] || refuse "$1 needs a value (see --help)"
      case "$1" in
        -n|--replicas) replicas=$2 ;;
        -p|--port) front_port=$2 ;;
        --listen) listen=$2 ;;
        --run-dir) run_dir=$2 ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) refuse "unknown option $(printf '%q' "${1:0:40}") (see --help)" ;;
  esac
done

# Every option is checked before anything starts: the values reach shell arithmetic and nginx.conf, so a number
# is decimal digits only (bash reads 08 as octal and 8632+1 as a sum) and an address is an address, never text
# that nginx would parse as more configuration.
decimal() {  # decimal NAME VALUE LO HI [WHY]: VALUE as a decimal number in [LO, HI], else refuse naming NAME
  case "$2" in
    ''|*[!0-9]*) refuse "$1 must be a whole number from $3 to $4 written in digits (got $(printf '%q' "${2:0:40}"))" ;;
  esac
  local digits=${2#"${2%%[!0]*}"}  # leading zeros dropped: 08 is eight, never octal
  [ -n "$digits" ] || digits=0
  if [ ${#digits} -gt 6 ] || [ "$digits" -lt "$3" ] || [ "$digits" -gt "$4" ]; then
    refuse "$1 must be from $3 to $4 (got ${2:0:40})${5:-}"
  fi
  echo "$digits"
}
replicas=$(decimal --replicas "$replicas" 1 32) || exit 2
front_port=$(decimal --port "$front_port" 1024 65535 \
  ": the replicas take the ports after it, and ports below 1024 belong to the system") || exit 2
if [ $((front_port + replicas)) -gt 65535 ]; then
  refuse "--port $front_port with $replicas replicas needs ports up to $((front_port + replicas)); the last port is 65535: choose a lower -p"
fi
PYTHON=${PYTHON:-.venv/bin/python}
[ -x "$PYTHON" ] || PYTHON=python3
valid_listen() {  # an IPv4 address, an IPv6 address (brackets optional) or a host name; nothing else
  local a=$1 octet
  if [[ $a =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$ ]]; then
    for octet in "${BASH_REMATCH[@]:1}"; do [ $((10#$octet)) -le 255 ] || return 1; done
    return 0
  fi
  a=${a#[}; a=${a%]}
  if [[ $a == *:* ]]; then  # IPv6 by its real rules (Python's ipaddress: one ::, eight groups, no zone): ':::: ' is not
    [[ ${#a} -le 45 && $a =~ ^[0-9A-Fa-f:.]+$ ]] || return 1
    "$PYTHON" -c 'import ipaddress, sys; ipaddress.IPv6Address(sys.argv[1])' "$a" 2>/dev/null
    return
  fi
  # A host name (RFC 1123 labels); its last label is not all digits, so 1.2.3.4.5 is neither an address nor a name.
  [[ ${#a} -le 253 && $a =~ ^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$ \
     && ! ${a%.} =~ (^|\.)[0-9]+$ ]]
}
if ! valid_listen "$listen"; then
  refuse "--listen must be an IP address or a host name (got $(printf '%q' "${listen:0:40}"))"
fi
listen_at=$listen
if [[ $listen == *:* ]]; then listen_at="[${listen#[}"; listen_at="${listen_at%]}]"; fi  # nginx writes [::1]:8500
# The runtime directory's path is written into nginx.conf: plain path characters only (no space, ; { } or quote).
if [ -n "$run_dir" ] && ! [[ ${#run_dir} -le 200 && $run_dir =~ ^[A-Za-z0-9._/+-]+$ ]]; then
  refuse "--run-dir must be a path of letters, digits and . _ / + - (at most 200 characters; got $(printf '%q' "${run_dir:0:40}"))"
fi
for port in $(seq "$front_port" $((front_port + replicas))); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "run_class.sh: port $port is in use (nginx takes $front_port, the replicas the next $replicas): choose -p" >&2
    exit 1
  fi
done

export KVVIZ_SHARED=${KVVIZ_SHARED:-1}  # a class's server: shared mode unless the teacher says otherwise
NGINX=${NGINX:-/usr/sbin/nginx}
if [ ! -x "$NGINX" ]; then
  echo "run_class.sh: $NGINX not found: sudo apt-get install nginx (Debian's package; it need not run as a service)" >&2
  exit 1
fi
made_run_dir=""  # the run directory when this run makes it (removed again if the poll's store is refused)
if [ -z "$run_dir" ]; then
  run_dir=$(mktemp -d /tmp/kvviz-class.XXXXXX); made_run_dir=$run_dir
elif [ ! -e "$run_dir" ]; then
  made_run_dir=$run_dir
fi
mkdir -p "$run_dir/tmp"
run_dir=$(cd "$run_dir" && pwd)
[ -z "$made_run_dir" ] || made_run_dir=$run_dir
chmod 755 "$run_dir"  # when started as root, nginx's workers run as nobody and must reach tmp/
# The class poll's store (KVVIZ_POLL_DB, else poll.sqlite3 in the run directory, shared by every replica) is checked
# and reached once now, so a bad value is one line here and not an error box at the first vote (python -m
# kvviz.poll.store says what is wrong); it also brings an older store's schema up to date, once.
export KVVIZ_POLL_DB=${KVVIZ_POLL_DB:-sqlite:///$run_dir/poll.sqlite3}
if ! "$PYTHON" -m kvviz.poll.store >/dev/null; then
  [ -z "$made_run_dir" ] || rm -rf -- "$made_run_dir"  # only a run directory made above, nothing else
  exit 2
fi

# One session cookie secret for every replica, so a session that fails over keeps valid XSRF cookies.
export STREAMLIT_SERVER_COOKIE_SECRET=${STREAMLIT_SERVER_COOKIE_SECRET:-$("$PYTHON" -c 'import secrets; print(secrets.token_hex(32))')}
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}

pids=()
nginx_pid=""
stop_all() {
  trap - INT TERM EXIT
  echo "run_class.sh: stopping nginx and ${#pids[@]} replicas" >&2
  local all=()
  for pid in "$nginx_pid" "${pids[@]}"; do [ -n "$pid" ] && all+=("$pid"); done
  [ ${#all[@]} -gt 0 ] && kill -TERM "${all[@]}" 2>/dev/null
  # Up to 10 s for a clean exit, then force. `wait` on the children reaps each as it exits (a poll with kill -0 saw
  # exited-but-unreaped children as alive and ran its whole loop, 50 sleeps that took 30 s on a loaded machine).
  ( sleep 10; kill -KILL "${all[@]}" 2>/dev/null ) >/dev/null 2>&1 &
  local killer=$!
  [ ${#all[@]} -gt 0 ] && wait "${all[@]}" 2>/dev/null
  kill "$killer" 2>/dev/null
  wait 2>/dev/null || true
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
trap 'stop_all' EXIT

ports=()
for i in $(seq 1 "$replicas"); do
  port=$((front_port + i))
  ports+=("$port")
  # Production flags: no file watcher (nothing reloads mid-lesson), bound to localhost (only nginx is public).
  # `python -m kvviz.ui.warm run` is `streamlit run` that loads the bundled model before the first student
  # arrives (kvviz/ui/warm.py): the class's first page does not wait for torch. The log says when it is loaded.
  "$PYTHON" -m kvviz.ui.warm run app.py --server.port "$port" --server.address 127.0.0.1 --server.headless true \
    --server.fileWatcherType none --server.runOnSave false --browser.gatherUsageStats false \
    >"$run_dir/replica-$port.log" 2>&1 &
  pids+=("$!")
  echo "$!" >"$run_dir/replica-$port.pid"
done

# Wait for every replica's health endpoint (up to 2 minutes: replicas start together on a busy laptop).
for idx in "${!ports[@]}"; do
  port=${ports[$idx]}
  healthy=0
  for _ in $(seq 240); do
    if ! kill -0 "${pids[$idx]}" 2>/dev/null; then
      echo "run_class.sh: replica on port $port exited; its log:" >&2; cat "$run_dir/replica-$port.log" >&2; exit 1
    fi
    curl -fsS -o /dev/null "http://127.0.0.1:$port/_stcore/health" 2>/dev/null && { healthy=1; break; }
    sleep 0.5
  done
  [ "$healthy" = 1 ] || { echo "run_class.sh: replica on port $port not healthy after 120 s" >&2; exit 1; }
done

# nginx.conf from the template: one upstream per replica (the others as its backups) and the cookie map.
cookie_map="" all_servers="" upstreams=""
for port in "${ports[@]}"; do
  cookie_map+="        \"$port\" kvviz_$port;"$'\n'
  all_servers+="        server 127.0.0.1:$port;"$'\n'
  upstreams+="    upstream kvviz_$port {"$'\n'"        server 127.0.0.1:$port;"$'\n'
  for other in "${ports[@]}"; do
    [ "$other" = "$port" ] || upstreams+="        server 127.0.0.1:$other backup;"$'\n'
  done
  upstreams+="    }"$'\n'
done
COOKIE_MAP=$cookie_map ALL_SERVERS=$all_servers UPSTREAMS=$upstreams RUN_DIR=$run_dir \
  LISTEN="$listen_at:$front_port" "$PYTHON" - deploy/nginx.conf.template "$run_dir/nginx.conf" <<'EOF'
import os, sys
text = open(sys.argv[1]).read()
for name in ("COOKIE_MAP", "ALL_SERVERS", "UPSTREAMS"):
    text = text.replace(f"@{name}@\n", os.environ[name])
for name in ("RUN_DIR", "LISTEN"):
    text = text.replace(f"@{name}@", os.environ[name])
open(sys.argv[2], "w").write(text)
EOF
"$NGINX" -t -q -p "$run_dir" -e "$run_dir/error.log" -c "$run_dir/nginx.conf"
"$NGINX" -p "$run_dir" -e "$run_dir/error.log" -c "$run_dir/nginx.conf" &
nginx_pid=$!
echo "$nginx_pid" >"$run_dir/nginx.pid.launcher"
for _ in $(seq 40); do
  curl -fsS -o /dev/null "http://127.0.0.1:$front_port/_stcore/health" 2>/dev/null && break
  kill -0 "$nginx_pid" 2>/dev/null || { echo "run_class.sh: nginx exited:" >&2; cat "$run_dir/error.log" >&2; exit 1; }
  sleep 0.25
done

echo "kvviz: $replicas replicas (ports ${ports[*]}) behind nginx on $listen:$front_port; runtime dir $run_dir"
if [ "$listen" = 0.0.0.0 ]; then
  for ip in $(hostname -I 2>/dev/null); do case "$ip" in *:*) ;; *) echo "  students open http://$ip:$front_port" ;; esac; done
fi
echo "  this machine: http://127.0.0.1:$front_port   (Ctrl-C stops everything)"
echo "READY" >"$run_dir/ready"

# Run until nginx exits or Ctrl-C. A replica that dies is reported; nginx moves its sessions to the others.
while kill -0 "$nginx_pid" 2>/dev/null; do
  wait -n || true  # returns when a child exits, and at once on Ctrl-C (the trap runs)
  for idx in "${!pids[@]}"; do
    if [ -n "${pids[$idx]}" ] && ! kill -0 "${pids[$idx]}" 2>/dev/null; then
      echo "run_class.sh: replica on port ${ports[$idx]} exited (log: $run_dir/replica-${ports[$idx]}.log)" >&2
      pids[$idx]=""
    fi
  done
done
echo "run_class.sh: nginx exited (log: $run_dir/error.log)" >&2
exit 1
