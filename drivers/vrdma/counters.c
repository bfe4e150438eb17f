// SPDX-License-Identifier: GPL-2.0
/*
 * The device's counters, as ib_core's "hw counters" of port 1:
 *
 *	rdma statistic show link vrdma0/1
 *	cat /sys/class/infiniband/vrdma0/ports/1/hw_counters/rcvd_pkts
 *
 * The driver counts with vrdma_count() into vdev->counters; this file only
 * names the counters and copies them out when ib_core asks.  One more,
 * rcvd_dropped, is computed here: the received packets dropped for any of
 * the reasons counted one by one.
 */
#include "vrdma.h"

#define VRDMA_CNT_RCVD_DROPPED	VRDMA_NUM_COUNTERS
#define VRDMA_NUM_STATS		(VRDMA_NUM_COUNTERS + 1)

/*
 * The counters of received packets that were not executed: each such
 * packet is counted in exactly one of them.  A request that found no
 * receive WQE is either NAKed (RC: rnr_nak_sent) or dropped (UD, and the
 * first packet of a UC message: no_recv_wqe).
 */
static const enum vrdma_counter vrdma_drop_counters[] = {
	VRDMA_CNT_ICRC_ERR,
	VRDMA_CNT_MALFORMED,
	VRDMA_CNT_NO_QP,
	VRDMA_CNT_SEQ_ERR,
	VRDMA_CNT_DUP_RESP,
	VRDMA_CNT_RNR_NAK_SENT,
	VRDMA_CNT_QKEY_ERR,
	VRDMA_CNT_NO_RECV_WQE,
	VRDMA_CNT_ATOMIC_REPLAY_MISS,
	VRDMA_CNT_READ_REPLAY_MISS,
	VRDMA_CNT_WRONG_NETDEV,
	VRDMA_CNT_RX_QUEUE_FULL,
};

static const struct rdma_stat_desc vrdma_counter_descs[] = {
	[VRDMA_CNT_SENT_PKTS].name	= "sent_pkts",
	[VRDMA_CNT_RCVD_PKTS].name	= "rcvd_pkts",
	[VRDMA_CNT_SENT_BYTES].name	= "sent_bytes",
	[VRDMA_CNT_RCVD_BYTES].name	= "rcvd_bytes",
	[VRDMA_CNT_LOOPBACK_PKTS].name	= "loopback_pkts",
	[VRDMA_CNT_ICRC_ERR].name	= "icrc_errors",
	[VRDMA_CNT_MALFORMED].name	= "malformed",
	[VRDMA_CNT_NO_QP].name		= "no_qp",
	[VRDMA_CNT_TX_ERR].name		= "tx_errors",
	[VRDMA_CNT_SEQ_ERR].name	= "seq_errors",
	[VRDMA_CNT_DUP_REQ].name	= "duplicate_requests",
	[VRDMA_CNT_NAK_SENT].name	= "nak_sent",
	[VRDMA_CNT_NAK_RCVD].name	= "nak_rcvd",
	[VRDMA_CNT_RNR_NAK_SENT].name	= "rnr_nak_sent",
	[VRDMA_CNT_RNR_NAK_RCVD].name	= "rnr_nak_rcvd",
	[VRDMA_CNT_RETRANSMITS].name	= "retransmits",
	[VRDMA_CNT_CQ_OVERFLOW].name	= "cq_overflows",
	[VRDMA_CNT_BAD_WQE].name	= "bad_wqes",
	[VRDMA_CNT_ATOMIC_REPLAYED].name = "atomic_replayed",
	[VRDMA_CNT_ATOMIC_REPLAY_MISS].name = "atomic_replay_missed",
	[VRDMA_CNT_READ_REPLAY_MISS].name = "read_replay_missed",
	[VRDMA_CNT_QKEY_ERR].name	= "qkey_errors",
	[VRDMA_CNT_NO_RECV_WQE].name	= "no_recv_wqe",
	[VRDMA_CNT_DROPPED_MSGS].name	= "dropped_msgs",
	[VRDMA_CNT_TIMEOUTS].name	= "timeouts",
	[VRDMA_CNT_IMPLIED_NAK].name	= "implied_naks",
	[VRDMA_CNT_DUP_RESP].name	= "duplicate_responses",
	[VRDMA_CNT_RETRY_EXC].name	= "retry_exceeded",
	[VRDMA_CNT_RNR_RETRY_EXC].name	= "rnr_retry_exceeded",
	[VRDMA_CNT_ACK_SENT].name	= "acks_sent",
	[VRDMA_CNT_ACK_COALESCED].name	= "acks_coalesced",
	[VRDMA_CNT_LOOPBACK_MSGS].name	= "loopback_msgs",
	[VRDMA_CNT_LOOPBACK_BYTES].name	= "loopback_bytes",
	[VRDMA_CNT_MCAST_SENT].name	= "mcast_sent_pkts",
	[VRDMA_CNT_MCAST_RCVD].name	= "mcast_rcvd_pkts",
	[VRDMA_CNT_SOFTIRQ_RESP].name	= "softirq_responses",
	[VRDMA_CNT_SOFTIRQ_READ].name	= "softirq_reads",
	[VRDMA_CNT_SOFTIRQ_READ_RESP].name = "softirq_read_responses",
	[VRDMA_CNT_DOORBELLS].name	= "doorbells",
	[VRDMA_CNT_WRONG_NETDEV].name	= "wrong_netdev",
	[VRDMA_CNT_RX_QUEUE_FULL].name	= "rx_queue_full",
	[VRDMA_CNT_RXE_FLUSH_ICRC].name	= "rxe_flush_icrc",
	[VRDMA_CNT_TX_HELD].name	= "tx_held",
	[VRDMA_CNT_RAW_SENT_PKTS].name	= "raw_sent_pkts",
	[VRDMA_CNT_RAW_SENT_BYTES].name	= "raw_sent_bytes",
	[VRDMA_CNT_RAW_RCVD_PKTS].name	= "raw_rcvd_pkts",
	[VRDMA_CNT_RAW_RCVD_BYTES].name	= "raw_rcvd_bytes",
	[VRDMA_CNT_RAW_DROPPED].name	= "raw_dropped",
	[VRDMA_CNT_RCVD_DROPPED].name	= "rcvd_dropped",
};

/* A counter added to the enum but not named here fails the build. */
static_assert(ARRAY_SIZE(vrdma_counter_descs) == VRDMA_NUM_STATS);

static struct rdma_hw_stats *vrdma_alloc_hw_port_stats(struct ib_device *ibdev,
						       u32 port_num)
{
	return rdma_alloc_hw_stats_struct(vrdma_counter_descs,
					  ARRAY_SIZE(vrdma_counter_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

/**
 * vrdma_get_hw_stats() - copy the counters out for ib_core
 * @ibdev: the device
 * @stats: from vrdma_alloc_hw_port_stats()
 * @port: VRDMA_PORT; 0 would ask for device-wide stats, which we have none of
 * @index: the counter sysfs asked for; all are read, they are cheap
 *
 * Each counter is read on its own, so a set read while packets flow is not
 * a snapshot of one instant; every value is exact.
 *
 * Return: the number of counters filled in.
 */
static int vrdma_get_hw_stats(struct ib_device *ibdev,
			      struct rdma_hw_stats *stats, u32 port, int index)
{
	struct vrdma_dev *vdev = to_vdev(ibdev);
	u64 dropped = 0;
	int i;

	if (port != VRDMA_PORT)
		return -EINVAL;

	for (i = 0; i < VRDMA_NUM_COUNTERS; i++)
		stats->value[i] = atomic64_read(&vdev->counters[i]);
	for (i = 0; i < ARRAY_SIZE(vrdma_drop_counters); i++)
		dropped += stats->value[vrdma_drop_counters[i]];
	stats->value[VRDMA_CNT_RCVD_DROPPED] = dropped;

	return VRDMA_NUM_STATS;
}

const struct ib_device_ops vrdma_counters_ops = {
	.alloc_hw_port_stats = vrdma_alloc_hw_port_stats,
	.get_hw_stats = vrdma_get_hw_stats,
};
