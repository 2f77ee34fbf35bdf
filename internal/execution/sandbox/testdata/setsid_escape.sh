#!/bin/sh
# Hostile: start a daemon in a new session that keeps writing a heartbeat,
# then hang, hoping the daemon outlives the wall-clock kill.
# usage: setsid_escape.sh WRITABLE_DIR MARKER
dir="$1"
setsid sh -c 'while :; do echo beat >> "$0/heartbeat"; sleep 0.05; done; : "$1"' "$dir" "$2" </dev/null >/dev/null 2>&1 &
echo "daemon started"
sleep 1000
