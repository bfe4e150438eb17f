#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Debian packages of make deb (build/deb, or VRDMA_DEB_DIR) on a system
# with no vrdma source tree: run on the host, it boots a VM of its own, on
# the kernel of VRDMA_KVER (6.1 or 6.12), whose root is the host's under a
# tmpfs overlay, so dpkg's changes vanish with it.  There, in a mount
# namespace whose tree directory is covered by an empty tmpfs, it
#   - dpkg -i vrdma-dkms and ibverbs-provider-vrdma; the package's postinst
#     has DKMS build and install vrdma.ko for the booted kernel;
#   - modprobe vrdma (from /lib/modules, DKMS's copy), rdma link add on a
#     veth;
#   - ibv_devinfo through the installed provider with no RDMAV_DRIVERS: the
#     provider that libibverbs maps (LD_DEBUG, /proc/PID/maps) must be the
#     package's, in libibverbs' provider directory;
#   - ibv_rc_pingpong --chk server and client on the device, from /;
#   - dpkg -r both: the module and the provider are gone again.
# make check-deb runs it; under TCG the DKMS build alone takes tens of
# minutes (minutes per object on a loaded host).
#
#   selftests/vrdma/device/deb_install.sh                # on the host, Linux 6.1
#   VRDMA_KVER=6.12.117+deb12-amd64 selftests/vrdma/device/deb_install.sh
VRDMA_OWN_VM=5400

# The checks run from a copy outside the tree, in a namespace where the
# tree is hidden; this first pass (in the VM) makes the copy and enters it.
if [ -n "${VRDMA_VM:-}" ] && [ -z "${DEB_TREE:-}" ]; then
	here=$(cd "$(dirname "$0")" && pwd)
	top=$(cd "$here/../../.." && pwd)
	debs=${VRDMA_DEB_DIR:-$top/build/deb}
	work=$(mktemp -d /tmp/deb_install.XXXXXX)
	mkdir "$work/device" "$work/lib" &&
		cp "$here/deb_install.sh" "$work/device/" &&
		cp "$here/../lib/lib.sh" "$work/lib/" || exit 1
	mkdir "$work/debs"
	cp "$debs"/vrdma-dkms_*_all.deb "$debs"/ibverbs-provider-vrdma_*.deb \
		"$work/debs/" 2>/dev/null
	# Covering the tree leaves the copy's lib.sh to say TAP and CI.
	export DEB_TREE=$top DEB_WORK=$work DEB_SRC=$debs
	exec unshare -m --propagation private sh -c \
		'mount -t tmpfs -o mode=0755 deb_install_hides_the_tree "$DEB_TREE" &&
		 cd / && exec bash "$DEB_WORK/device/deb_install.sh"'
fi

. "$(dirname "$0")/../lib/lib.sh"

# lib.sh points libibverbs at the tree's provider: here only what dpkg
# installed may answer.
unset RDMAV_DRIVERS

SLOW=${VRDMA_TEST_SLOW:-1}
KREL=$(uname -r)
MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null ||
	gcc -print-multiarch)
PROVIDER=/usr/lib/$MULTIARCH/libibverbs/libvrdma-rdmav34.so
DEV=vrdma0 N0=dvi0 N1=dvi1 IP0=10.213.0.1
PORT=18990

[ "$(id -u)" -eq 0 ] || skip_all "must run as root (in the VM)"
for t in dpkg dkms gcc ibv_devinfo ibv_rc_pingpong unshare; do
	command -v "$t" >/dev/null || skip_all "$t is not installed"
done
dkms_deb=$(ls "$DEB_WORK"/debs/vrdma-dkms_*_all.deb 2>/dev/null | head -n 1)
prov_deb=$(ls "$DEB_WORK"/debs/ibverbs-provider-vrdma_*.deb 2>/dev/null | head -n 1)
[ -n "$dkms_deb" ] && [ -n "$prov_deb" ] ||
	skip_all "no packages in $DEB_SRC (make deb)"
echo "# kernel $KREL; packages: ${dkms_deb##*/} ${prov_deb##*/}"

cleanup()
{
	stop_servers TERM
	rdma_links_del "$DEV"
	ip link del "$N0" 2>/dev/null
	return 0
}
trap cleanup EXIT

check "the source tree is hidden" test ! -e "$DEB_TREE/dkms.conf"
check_eq "vrdma is not loaded" "" "$(lsmod | grep '^vrdma ')"
# A module from make install (updates/) would shadow DKMS's.
check_eq "no vrdma.ko in /lib/modules/$KREL before" "" \
	"$(find "/lib/modules/$KREL/" -name 'vrdma.ko*' 2>/dev/null)"
check_eq "no vrdma provider installed before" "" \
	"$(ls "$PROVIDER" /etc/libibverbs.d/vrdma.driver 2>/dev/null)"
check "the compiler works" sh -c \
	'echo "int main(void) { return 0; }" | gcc -x c -o /tmp/deb_cc_ok - && /tmp/deb_cc_ok'

# The postinst builds for the booted kernel, and for the newest installed
# one too when that is another.  The VM has the host's headers of 6.1 and
# 6.12, and each is tested by a boot of its own: the other kernels' build
# links go (in the overlay), as on a system with only the booted kernel's
# headers, so that the VM compiles the module once.
for b in /lib/modules/*/build; do
	[ "$b" = "/lib/modules/$KREL/build" ] || rm -f "$b"
done
# Under TCG the build takes many minutes: its output is shown as it goes,
# and the build's make.log once a minute (how far it got).
t0=$SECONDS
(
	while sleep 60; do
		l=$(ls /var/lib/dkms/vrdma/*/build/make.log 2>/dev/null | head -n 1)
		[ -z "$l" ] || echo "# $((SECONDS - t0)) s: $(grep -c ' CC ' "$l") objects compiled"
	done
) &
progress=$!
DEBIAN_FRONTEND=noninteractive dpkg -i "$dkms_deb" "$prov_deb" </dev/null 2>&1 |
	sed -u 's/^/#   /'
rc=${PIPESTATUS[0]}
kill "$progress"
wait "$progress" 2>/dev/null
if [ "$rc" -ne 0 ]; then
	for l in /var/lib/dkms/vrdma/*/build/make.log; do
		[ -e "$l" ] && sed 's/^/#   make.log: /' "$l"
	done
fi
tap_result "$rc" "dpkg -i both packages ($((SECONDS - t0)) s)"
check_match "dkms installed vrdma for $KREL" \
	"^vrdma/[^,]+, $KREL, [^:]+: installed" "$(dkms status vrdma 2>&1)"
ko=$(modinfo -n vrdma 2>&1)
check_match "modprobe finds DKMS's vrdma.ko" \
	"^/lib/modules/$KREL/updates/dkms/vrdma\\.ko" "$ko"
check_match "vrdma.ko is built for $KREL" "^$KREL " \
	"$(modinfo -F vermagic vrdma 2>&1)"
check "the provider is installed" test -f "$PROVIDER"
check_eq "vrdma.driver names it" "driver vrdma" \
	"$(cat /etc/libibverbs.d/vrdma.driver 2>&1)"

check "modprobe vrdma" modprobe vrdma
check "modprobe ib_uverbs" modprobe ib_uverbs
ip -batch - <<-EOF
	link add $N0 type veth peer name $N1
	addr add $IP0/24 dev $N0
	link set $N0 up
	link set $N1 up
EOF
check "rdma link add $DEV type vrdma netdev $N0" \
	rdma link add "$DEV" type vrdma netdev "$N0"
check "$DEV port is ACTIVE" wait_until $((20 * SLOW)) port_active "$DEV"
check "$DEV has an IPv4 RoCE v2 GID" \
	wait_until $((10 * SLOW)) roce_v2_ipv4_gid "$DEV"
gid=$(roce_v2_ipv4_gid "$DEV")

check_match "ibv_devices lists $DEV" "^[[:space:]]*$DEV[[:space:]]+[0-9a-f]{16}" \
	"$(ibv_devices 2>&1)"
out=$(LD_DEBUG=files ibv_devinfo -d "$DEV" 2>&1)
check_match "ibv_devinfo shows $DEV, port active" "state:[[:space:]]+PORT_ACTIVE" \
	"$out"
check_eq "no provider warning" "" \
	"$(printf '%s\n' "$out" | grep -i "couldn.t\|no userspace\|warning")"
loaded=$(printf '%s\n' "$out" | sed -n 's/.*file=\([^ ]*libvrdma[^ ]*\) .*/\1/p' |
	sort -u)
check_eq "libibverbs loaded the installed provider" "$PROVIDER" "$loaded"

# ibv_rc_pingpong: server and client on $DEV (RC through its own GID),
# from / (no tree around).  The server has the provider mapped while it
# waits for the client.
srv_log=$(mktemp)
cli_log=$(mktemp)
ibv_rc_pingpong -d "$DEV" -g "$gid" --chk -n 100 -p "$PORT" >"$srv_log" 2>&1 &
spid=$!
servers+=("$spid")
if wait_until $((60 * SLOW)) tcp_listening "$PORT"; then
	maps=$(grep -o '/[^ ]*libvrdma[^ ]*' "/proc/$spid/maps" 2>&1 | sort -u)
	check_eq "the server maps the installed provider" "$PROVIDER" "$maps"
	timeout -k 5 $((120 * SLOW)) ibv_rc_pingpong -d "$DEV" -g "$gid" \
		--chk -n 100 -p "$PORT" 127.0.0.1 >"$cli_log" 2>&1
	crc=$?
	wait_until $((30 * SLOW)) sh -c "! kill -0 $spid" || kill "$spid"
	wait "$spid"
	src=$?
	if [ "$crc" -ne 0 ] || [ "$src" -ne 0 ] ||
	   ! grep -q 'iters in' "$cli_log"; then
		echo "# client -> exit $crc"
		sed 's/^/#   /' "$cli_log"
		echo "# server -> exit $src"
		sed 's/^/#   /' "$srv_log"
		tap_result 1 "ibv_rc_pingpong --chk server and client"
	else
		grep 'iters in' "$cli_log" | sed 's/^/# /'
		tap_result 0 "ibv_rc_pingpong --chk server and client"
	fi
else
	echo "# the server did not listen on $PORT:"
	sed 's/^/#   /' "$srv_log"
	kill "$spid" 2>/dev/null
	tap_result 1 "the server maps the installed provider"
	tap_result 1 "ibv_rc_pingpong --chk server and client"
fi
rm -f "$srv_log" "$cli_log"

cleanup
check "rmmod vrdma" rmmod vrdma
out=$(DEBIAN_FRONTEND=noninteractive dpkg -r vrdma-dkms ibverbs-provider-vrdma \
	</dev/null 2>&1)
rc=$?
printf '%s\n' "$out" | sed 's/^/#   /'
tap_result "$rc" "dpkg -r both packages"
check_eq "no vrdma.ko in /lib/modules/$KREL after" "" \
	"$(find "/lib/modules/$KREL/" -name 'vrdma.ko*' 2>/dev/null)"
check_eq "dkms knows no vrdma after" "" "$(dkms status vrdma 2>&1)"
check_eq "no vrdma provider after" "" \
	"$(ls "$PROVIDER" /etc/libibverbs.d/vrdma.driver 2>/dev/null)"
finish
