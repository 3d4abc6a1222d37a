#!/bin/bash
# two busy loops at nice 0 for 0.4 s every 2 s, until killed: a noisy neighbour taking both CPUs
while true; do
  sleep 1.6
  timeout 0.4 sh -c 'while :; do :; done' & timeout 0.4 sh -c 'while :; do :; done' & wait
done
