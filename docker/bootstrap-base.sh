#!/usr/bin/env bash
# bootstrap-base.sh TARGET
#
# Makes the Debian bookworm root filesystem the worker image is built on, in the empty (or not yet
# existing) directory TARGET, for machines that reach a Debian mirror but no container registry.
# `dirtywork image build --bootstrap-base` runs this script (embedded in the binary) and imports
# TARGET as the image dirtywork-base:bookworm through the Engine API; see README.md to do it by hand.
#
# Needs root (debootstrap creates device nodes and files owned by other users) and debootstrap.
# Environment:
#   BOOTSTRAP_MIRROR           Debian mirror (default http://deb.debian.org/debian)
#   BOOTSTRAP_SECURITY_MIRROR  security mirror (default http://deb.debian.org/debian-security;
#                              set it empty where only the main mirror is reachable)
set -euo pipefail

suite=bookworm
mirror=${BOOTSTRAP_MIRROR:-http://deb.debian.org/debian}
security_mirror=${BOOTSTRAP_SECURITY_MIRROR-http://deb.debian.org/debian-security}

die() {
	echo "bootstrap-base: $*" >&2
	exit 1
}

if [ $# -ne 1 ] || [ -z "$1" ]; then
	die "usage: bootstrap-base.sh TARGET"
fi
[ "$(id -u)" -eq 0 ] || die "needs root: debootstrap creates device nodes and files owned by other users (run it with sudo)"
command -v debootstrap >/dev/null || die "debootstrap is not installed (on Debian or Ubuntu: apt-get install debootstrap)"

target=$(realpath -m -- "$1")
# The mount table escapes white space and backslashes; a plain path is matched against it as is.
case $target in
*[[:space:]\\]*) die "the target's path must not contain white space or backslashes: $target" ;;
esac
mkdir -p -- "$target"
[ -z "$(ls -A -- "$target")" ] || die "$target is not empty"

# Unmounts whatever is still mounted inside the target, deepest first. debootstrap mounts /proc and
# /sys (and, inside a container, binds /dev) while it works; a mount left behind would end up in the
# image, and removing the directory afterwards would delete the host's files through it.
unmount_inside() {
	local mounts
	mounts=$(awk -v t="$target/" 'index($5, t) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
	[ -z "$mounts" ] && return 0
	while read -r m; do
		umount -l -- "$m"
	done <<<"$mounts"
}
trap unmount_inside EXIT
# Stopped by a signal (dirtywork cancels with SIGTERM to the process group), exit through the EXIT
# trap above instead of dying with mounts still in place.
trap 'exit 143' TERM
trap 'exit 130' INT

echo "bootstrap-base: debootstrap --variant=minbase $suite into $target from $mirror"
debootstrap --variant=minbase "$suite" "$target" "$mirror"
unmount_inside

# Package sources in the deb822 form Debian's own images use.
rm -f -- "$target/etc/apt/sources.list"
{
	printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$mirror" "$suite" "$suite"
	if [ -n "$security_mirror" ]; then
		printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
			"$security_mirror" "$suite"
	fi
} >"$target/etc/apt/sources.list.d/debian.sources"

# Container conventions, as in Debian's published images: no services start during package
# installs, downloaded packages and translations are not kept, and documentation other than the
# copyright files is not installed.
printf '#!/bin/sh\nexit 101\n' >"$target/usr/sbin/policy-rc.d"
chmod 0755 "$target/usr/sbin/policy-rc.d"
cat >"$target/etc/apt/apt.conf.d/docker-clean" <<'CONF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CONF
printf 'Acquire::Languages "none";\n' >"$target/etc/apt/apt.conf.d/docker-no-languages"
cat >"$target/etc/dpkg/dpkg.cfg.d/docker-slim" <<'CONF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/lintian/*
CONF

# The container engine provides these per container; the build host's copies must not leak into
# the image, and device nodes in a layer fail to import on user-namespaced engines.
rm -f -- "$target/etc/resolv.conf" "$target/etc/hostname"
find "$target/dev" -mindepth 1 -delete
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' >"$target/etc/hosts"

rm -rf -- "$target"/var/lib/apt/lists/* "$target"/var/cache/apt/archives/*.deb "$target"/var/cache/apt/*.bin \
	"$target"/var/log/*.log "$target"/tmp/* "$target"/var/tmp/*
echo "bootstrap-base: root filesystem ready in $target"
