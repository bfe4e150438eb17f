#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The NVMe over RDMA pieces that nvmeof.sh and nvmeof_2vm.sh share: the
# target in nvmet's configfs, and the host's block device of its
# namespace.  The sourcing script sets CFG (nvmet's configfs directory),
# NQN (the subsystem) and PORTNO (the port's service id).

# target_up IP: subsystem NQN, namespace 1 on /dev/nullb0, rdma port 1 on
# IP.
target_up()
{
	local s=$CFG/subsystems/$NQN p=$CFG/ports/1

	mkdir "$s" && echo 1 >"$s/attr_allow_any_host" &&
		mkdir "$s/namespaces/1" &&
		echo /dev/nullb0 >"$s/namespaces/1/device_path" &&
		echo 1 >"$s/namespaces/1/enable" &&
		mkdir "$p" && echo rdma >"$p/addr_trtype" &&
		echo ipv4 >"$p/addr_adrfam" && echo "$1" >"$p/addr_traddr" &&
		echo "$PORTNO" >"$p/addr_trsvcid" &&
		ln -s "$s" "$p/subsystems/$NQN"
}

# target_down: target_up's target taken down, children before parents;
# a piece that is not there (a target_up that failed half-way) is
# skipped.  Fails without the subsystem (nothing was up) and at the first
# step that fails.
target_down()
{
	local s=$CFG/subsystems/$NQN p=$CFG/ports/1

	[ -d "$s" ] || return
	[ ! -L "$p/subsystems/$NQN" ] || rm "$p/subsystems/$NQN" || return
	[ ! -d "$p" ] || rmdir "$p" || return
	if [ -d "$s/namespaces/1" ]; then
		echo 0 >"$s/namespaces/1/enable" &&
			rmdir "$s/namespaces/1" || return
	fi
	rmdir "$s"
}

# ns_dev: the block device of our subsystem's namespace ("" if none).
ns_dev()
{
	local b

	for b in /sys/block/nvme*n*; do
		[ -e "$b" ] || continue
		# A multipath path device (nvmeXcYnZ) is not the one to use.
		case ${b##*/} in nvme*c*n*) continue ;; esac
		if [ "$(cat "$b/device/subsysnqn" 2>/dev/null)" = "$NQN" ]; then
			echo "/dev/${b##*/}"
			return
		fi
	done
}
