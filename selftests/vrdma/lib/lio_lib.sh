#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The iSER and SRP pieces that iser.sh and iser_2vm.sh, srp.sh and
# srp_2vm.sh share: LIO, the kernel's SCSI target, set up and torn down
# through its configfs (targetcli needs a D-Bus daemon, which the VM has
# not), exporting a 64 MiB RAM disk; and the initiators' view of it, the
# SCSI disk of an open-iscsi session or of an ib_srp remote port.  The
# sourcing script sets DEV, SLOW, PORTNO (the target's port) and TARGET_IP
# (its address); for iSER also IQN, for SRP INITIATOR_IP (the initiator's
# address).

# LIO's configfs directory.
CFG=/sys/kernel/config/target

# lio_rd_up RD: the 64 MiB RAM disk RD (a directory of core/rd_mcp_0).
lio_rd_up()
{
	mkdir -p "$1" && echo rd_pages=16384 >"$1/control" &&
		echo 1 >"$1/enable"
}

# ---------------------------------------------------------------- iSER ----

# iser_target_up: the RAM disk as LUN 0 of IQN, an iSER portal on
# TARGET_IP:PORTNO, any initiator allowed, no authentication.
iser_target_up()
{
	local rd=$CFG/core/rd_mcp_0/iser_rd t=$CFG/iscsi/$IQN/tpgt_1 a
	local np=$TARGET_IP:$PORTNO

	lio_rd_up "$rd" &&
		mkdir -p "$t/lun/lun_0" && ln -s "$rd" "$t/lun/lun_0/rd" &&
		mkdir "$t/np/$np" && echo 1 >"$t/np/$np/iser" || return 1
	for a in authentication=0 generate_node_acls=1 \
		demo_mode_write_protect=0 cache_dynamic_acls=1; do
		echo "${a#*=}" >"$t/attrib/${a%=*}" || return 1
	done
	echo 1 >"$t/enable"
}

# iser_target_down: children before parents.
iser_target_down()
{
	local rd=$CFG/core/rd_mcp_0/iser_rd t=$CFG/iscsi/$IQN/tpgt_1
	local np=$TARGET_IP:$PORTNO

	[ -d "$CFG/iscsi/$IQN" ] || [ -d "$rd" ] || return 0
	echo 0 >"$t/enable" 2>/dev/null
	echo 0 >"$t/np/$np/iser" 2>/dev/null
	rmdir "$t/np/$np" 2>/dev/null
	rm -f "$t/lun/lun_0/rd"
	rmdir "$t/lun/lun_0" "$t" "$CFG/iscsi/$IQN" 2>/dev/null
	rmdir "$rd" "$CFG/core/rd_mcp_0" 2>/dev/null
	! [ -d "$CFG/iscsi/$IQN" ] && ! [ -d "$rd" ]
}

iscsi_node()
{
	iscsiadm -m node -T "$IQN" -p "$TARGET_IP:$PORTNO" -I iser "$@"
}

# iscsid_up: iscsiadm talks to iscsid through this abstract socket.
iscsid_up() { ss -xl | grep -q '@ISCSIADM_ABSTRACT_NAMESPACE'; }

# iscsi_disk: the SCSI disk of our session ("" if none).
iscsi_disk()
{
	local s b

	for s in /sys/class/iscsi_session/session*; do
		[ "$(cat "$s/targetname" 2>/dev/null)" = "$IQN" ] || continue
		for b in "$s"/device/target*/*/block/*; do
			[ -e "$b" ] && echo "/dev/${b##*/}" && return
		done
	done
}

iscsi_have_disk() { [ -n "$(iscsi_disk)" ] && [ -b "$(iscsi_disk)" ]; }
iscsi_no_disk() { [ -z "$(iscsi_disk)" ]; }

# iser_login: for a test's VM of its own: ib_iser, iscsid (in a session of
# its own: it signals its process group when it stops; its PID in
# /tmp/iscsid.pid), the login to TARGET_IP:PORTNO; prints the disk and
# whether immediate data was negotiated ("/dev/sdX immediate_data=1"),
# then the session as iscsiadm lists it.
iser_login()
{
	modprobe -a ib_iser sd_mod || return 1
	mkdir -p /run/lock/iscsi
	setsid iscsid -f >/tmp/iscsid.log 2>&1 </dev/null &
	echo $! >/tmp/iscsid.pid
	wait_until $((20 * SLOW)) iscsid_up || { cat /tmp/iscsid.log; return 1; }
	iscsi_node -o new >/dev/null && iscsi_node --login &&
		wait_until $((60 * SLOW)) iscsi_have_disk || return 1
	echo "$(iscsi_disk) immediate_data=$(iscsi_session_param immediate_data)"
	iscsiadm -m session
}

# iser_logout: the session goes, and with it the disk and the node record.
iser_logout()
{
	iscsi_node --logout && wait_until $((30 * SLOW)) iscsi_no_disk &&
		iscsi_node -o delete
}

# iscsid_stop: the iscsid of iser_login.
iscsid_stop() { kill "$(cat /tmp/iscsid.pid)" 2>/dev/null; }

# iscsi_session_param NAME: a negotiated parameter of our session.
iscsi_session_param()
{
	local s

	for s in /sys/class/iscsi_session/session*; do
		[ "$(cat "$s/targetname" 2>/dev/null)" = "$IQN" ] || continue
		cat "$s/$1" 2>/dev/null
		return
	done
}

# ----------------------------------------------------------------- SRP ----

# srp_port_id: the name ib_srpt gives DEV's port in configfs, made from its
# GID 0: the interface ID of a link-local GID (as a RoCE port's is),
# "xxxx:xxxx:xxxx:xxxx", else 0x and the whole GID in hex.
srp_port_id()
{
	local gid

	gid=$(cat "/sys/class/infiniband/$DEV/ports/1/gids/0") || return 1
	case $gid in
	fe80:0000:0000:0000:*) echo "${gid#fe80:0000:0000:0000:}" ;;
	*) echo "0x${gid//:/}" ;;
	esac
}

# srp_target_up TPORT: the RAM disk as LUN 0 of DEV's port TPORT (one
# target portal group), an ACL with the LUN mapped, and the RDMA/CM
# listener on PORTNO.  ib_srpt has no demo mode: without the ACL every
# login is refused.  It names an RDMA/CM login by the source address of
# its connection's cm_id (%pIS of route.addr.src_addr), which on the
# passive side is the local one: TARGET_IP, not the initiator's.
srp_target_up()
{
	local rd=$CFG/core/rd_mcp_0/srp_rd t=$CFG/srpt/$1/$1

	lio_rd_up "$rd" &&
		mkdir -p "$t/lun/lun_0" && ln -s "$rd" "$t/lun/lun_0/rd" &&
		mkdir -p "$t/acls/$TARGET_IP/lun_0" &&
		ln -s "$t/lun/lun_0" "$t/acls/$TARGET_IP/lun_0/lun" &&
		echo "$PORTNO" >"$CFG/srpt/discovery_auth/rdma_cm_port" &&
		echo 1 >"$t/enable"
}

# srp_target_down: children before parents; the listener closed.
srp_target_down()
{
	local rd=$CFG/core/rd_mcp_0/srp_rd p t

	[ -d "$CFG/srpt" ] || [ -d "$rd" ] || return 0
	for p in "$CFG"/srpt/*/*/enable; do
		[ -e "$p" ] && echo 0 >"$p"
	done
	echo 0 >"$CFG/srpt/discovery_auth/rdma_cm_port" 2>/dev/null
	for t in "$CFG"/srpt/*/*/lun; do
		[ -d "$t" ] || continue
		t=${t%/lun}
		rm -f "$t"/acls/*/lun_*/lun
		rmdir "$t"/acls/*/lun_* "$t"/acls/* 2>/dev/null
		rm -f "$t"/lun/lun_*/rd
		rmdir "$t"/lun/lun_* "$t" "${t%/*}" 2>/dev/null
	done
	rmdir "$rd" "$CFG/core/rd_mcp_0" 2>/dev/null
	rmdir "$CFG/srpt" 2>/dev/null
	! [ -d "$CFG/srpt" ] && ! [ -d "$rd" ]
}

# srp_host: the initiator's SCSI host of its remote port ("" if none).
srp_host()
{
	local p h

	for p in /sys/class/srp_remote_ports/port-*; do
		[ -e "$p" ] || continue
		h=${p##*/port-}
		echo "/sys/class/scsi_host/host${h%%:*}"
		return
	done
}

# srp_disk: the SCSI disk behind the SRP remote port ("" if none).
srp_disk()
{
	local h b

	h=$(srp_host)
	[ -n "$h" ] || return 0
	for b in "$h"/device/target*/*/block/*; do
		[ -e "$b" ] && echo "/dev/${b##*/}" && return
	done
}

srp_have_disk() { [ -n "$(srp_disk)" ] && [ -b "$(srp_disk)" ]; }
srp_no_disk() { [ -z "$(srp_disk)" ] && [ -z "$(srp_host)" ]; }

# srp_add_target ID_EXT IOC_GUID [PARAM...]: ib_srp's login over RDMA/CM
# from INITIATOR_IP to TARGET_IP:PORTNO (the write returns once it
# succeeded or failed), within a time limit.
srp_add_target()
{
	local id=$1 guid=$2 p
	local opts="id_ext=$id,ioc_guid=$guid,dest=$TARGET_IP:$PORTNO"

	opts+=",src=$INITIATOR_IP"
	shift 2
	for p; do
		opts+=",$p"
	done
	# shellcheck disable=SC2016 # the inner shell's parameters
	timeout -k 5 $((60 * SLOW)) bash -c 'echo "$1" >"$2"' - "$opts" \
		"/sys/class/infiniband_srp/srp-$DEV-1/add_target"
}

# srp_logout: the remote port deleted (ib_srp removes its SCSI host).
srp_logout()
{
	local p

	for p in /sys/class/srp_remote_ports/port-*/delete; do
		[ -e "$p" ] && echo 1 >"$p"
	done
	wait_until $((30 * SLOW)) srp_no_disk
}
