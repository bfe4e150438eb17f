#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The UD and UC tools over the device: ibv_ud_pingpong and ibv_uc_pingpong
# --chk, ib_send_bw -c UD, ib_send_bw -c UC, ib_write_bw -c UC (see
# rc_tools.sh, which runs them with RC_TOOLS_SET=ucud).
RC_TOOLS_SET=ucud exec "$(dirname "$0")/rc_tools.sh" "$@"
