#!/usr/bin/env bash
# Installs the system packages the full test suite and the linters need when
# they are missing: tmux (the end-to-end script), prometheus (the Prometheus
# source's integration tests), bash-completion (the completion script's
# test completes real command lines) and shellcheck (`make lint` checks the
# shell scripts) and ca-certificates (the CA bundle `make image` puts in the
# agent's image), all from Debian. Nothing else is needed but
# Go. Run by `make test`; safe to run again.
set -euo pipefail
need=()
command -v tmux >/dev/null 2>&1 || need+=(tmux)
command -v prometheus >/dev/null 2>&1 || need+=(prometheus)
[ -f /usr/share/bash-completion/bash_completion ] || need+=(bash-completion)
command -v shellcheck >/dev/null 2>&1 || need+=(shellcheck)
[ -f /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
if [ ${#need[@]} -eq 0 ]; then
	exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1; then
		sudo="sudo"
	else
		echo "deps: ${need[*]} missing and not root: install them with apt-get install ${need[*]}" >&2
		exit 1
	fi
fi
echo "deps: installing ${need[*]} (apt-get)"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# Debian starts a prometheus service on install; the tests run their own on
# free loopback ports and need nothing else listening.
$sudo systemctl stop prometheus >/dev/null 2>&1 || true
$sudo systemctl disable prometheus >/dev/null 2>&1 || true
