#!/bin/sh
# SPDX-License-Identifier: MIT
#
# deps.sh - install the Debian packages profring builds, tests and
# benchmarks with (Debian 12).  Run as root, or as a user with sudo.
# The one list of them: .ci/run and `make deps` run this script.
set -e
PACKAGES="build-essential make gcc clang libclang-rt-14-dev pkg-config
	liburcu-dev libck-dev zlib1g-dev libunwind-dev libmicrohttpd-dev
	libdw-dev libc6-dbg binutils
	gawk python3 gnuplot-nox golang-go google-perftools libjemalloc2 heaptrack
	linux-perf sqlite3 xz-utils nodejs
	liblttng-ust-dev lttng-tools babeltrace
	mandoc"

if [ "$(id -u)" -eq 0 ]; then
	SUDO=
elif command -v sudo >/dev/null 2>&1; then
	SUDO=sudo
else
	echo "deps.sh: run as root, or install sudo" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $PACKAGES >/dev/null
