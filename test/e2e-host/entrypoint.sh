#!/bin/sh
# Authorizes the bootstrap key given in BOOTSTRAP_PUBLIC_KEY for root, makes
# fresh host keys, and runs sshd in the foreground with its log on stderr.
set -eu
if [ -z "${BOOTSTRAP_PUBLIC_KEY:-}" ]; then
  echo "BOOTSTRAP_PUBLIC_KEY is not set: pass the bootstrap public key with -e" >&2
  exit 2
fi
printf '%s\n' "$BOOTSTRAP_PUBLIC_KEY" > /root/.ssh/authorized_keys
chmod 0600 /root/.ssh/authorized_keys
ssh-keygen -A
exec /usr/sbin/sshd -D -e
