#!/bin/sh
# Prints the resource limits the pipeline runs under (dash's ulimit).
echo "nofile=$(ulimit -n) core=$(ulimit -c) cpu=$(ulimit -t) fsize=$(ulimit -f) nproc=$(ulimit -p)"
