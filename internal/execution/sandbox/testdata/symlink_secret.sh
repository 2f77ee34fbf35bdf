#!/bin/sh
# Hostile: plant a symlink to a secret in the output directory and read
# through it. usage: symlink_secret.sh OUT_DIR
ln -s /etc/shadow "$1/shadow-link" && echo "symlink planted"
if cat "$1/shadow-link" 2>&1; then echo "ESCAPED symlink"; exit 1; fi
echo "BLOCKED symlink"
