// SPDX-License-Identifier: GPL-2.0
/*
 * debugfs: a look at each QP's rings, for learning and debugging.
 *
 *   /sys/kernel/debug/vrdma/<device>/qp<qpn>
 *
 * shows the QP's state, its SQ and RQ rings (the producer index the process
 * wrote into shared memory, the consumer index the kernel owns), the send
 * WQEs in flight -- copied out of the SQ, not yet completed -- with their
 * PSNs, the receive WQE being filled, the responder's expected PSN and MSN,
 * and the indices of the QP's CQs.  The shared indices are shown as the
 * process left them: garbage there is what the kernel would refuse.
 *
 * The directory of a device keeps the name it was registered with.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "vrdma.h"

static struct dentry *vrdma_debugfs_root;

static const char *const vrdma_qp_states[] = {
	[IB_QPS_RESET] = "RESET", [IB_QPS_INIT] = "INIT", [IB_QPS_RTR] = "RTR",
	[IB_QPS_RTS] = "RTS", [IB_QPS_SQD] = "SQD", [IB_QPS_SQE] = "SQE",
	[IB_QPS_ERR] = "ERR",
};

static const char *vrdma_qp_type_name(struct vrdma_qp *qp)
{
	switch (qp->ibqp.qp_type) {
	case IB_QPT_RC:
		return "RC";
	case IB_QPT_UC:
		return "UC";
	case IB_QPT_XRC_INI:
		return "XRC_INI";
	case IB_QPT_XRC_TGT:
		return "XRC_TGT";
	case IB_QPT_RAW_PACKET:
		return "RAW_PACKET";
	default:
		return "UD";
	}
}

static const char *const vrdma_swqe_states[] = {
	[VRDMA_SWQE_NEW] = "fetched",
	[VRDMA_SWQE_SENDING] = "sending",
	[VRDMA_SWQE_SENT] = "sent",
	[VRDMA_SWQE_DONE] = "done",
};

static void vrdma_show_ring(struct seq_file *s, const char *name,
			    struct vrdma_queue *q, bool kernel_produces)
{
	u32 prod, cons;

	if (!q->ring)
		return;
	if (kernel_produces) {
		prod = q->kidx;
		cons = READ_ONCE(q->ring->cons);
	} else {
		prod = READ_ONCE(q->ring->prod);
		cons = q->kidx;
	}
	seq_printf(s, "%s: entries %u stride %u prod %u cons %u used %u%s\n",
		   name, q->num_entries, q->entry_size, prod, cons, prod - cons,
		   prod - cons > q->num_entries ? " (garbage index)" : "");
}

/* resize_cq swaps a CQ's ring under its lock, and frees the old one. */
static void vrdma_show_cq(struct seq_file *s, const char *name,
			  struct vrdma_cq *cq)
{
	unsigned long flags;

	if (!cq)	/* XRC QPs have one CQ, or none */
		return;
	spin_lock_irqsave(&cq->lock, flags);
	vrdma_show_ring(s, name, &cq->queue, true);
	spin_unlock_irqrestore(&cq->lock, flags);
}

static int vrdma_qp_show(struct seq_file *s, void *unused)
{
	struct vrdma_qp *qp = s->private;
	u32 i;

	vrdma_qp_lock(qp);
	seq_printf(s, "qpn %u type %s state %s dest_qpn %u mtu %u\n",
		   qp->ibqp.qp_num,
		   vrdma_qp_type_name(qp),
		   qp->state < ARRAY_SIZE(vrdma_qp_states) ?
		   vrdma_qp_states[qp->state] : "?", qp->attr.dest_qp_num, qp->mtu);
	vrdma_show_ring(s, "sq", &qp->sq, false);
	seq_printf(s, "requester: fetch %u cur %u next_psn %u oldest_unacked_psn %u rd_atomic %u retry %u rnr_wait %d probe %d head %u ring_fetch %u\n",
		   qp->req.fetch, qp->req.cur, qp->req.psn, qp->req.una,
		   qp->req.rd_atomic, qp->req.retry, qp->req.rnr_wait,
		   qp->req.probe, qp->req.head, qp->req.ring_fetch);
	/* req.head up to req.fetch: copied out of the ring, not completed. */
	for (i = qp->req.head; qp->swqe && i != qp->req.fetch; i++) {
		struct vrdma_swqe *swqe = vrdma_swqe_at(qp, i);

		seq_printf(s, "  sq[%u] wr_id 0x%llx opcode %u length %u %s psn %u..%u status %u%s\n",
			   i, swqe->wqe->wr_id, swqe->wqe->opcode,
			   swqe->length,
			   swqe->state < ARRAY_SIZE(vrdma_swqe_states) ?
			   vrdma_swqe_states[swqe->state] : "?",
			   swqe->first_psn, swqe->last_psn, swqe->status,
			   swqe->kind == VRDMA_SWQE_TM_READ ? " (rendezvous READ)" :
			   swqe->kind == VRDMA_SWQE_TM_FIN ? " (rendezvous FIN)" :
			   "");
	}
	if (qp->srq && qp->srq->srqn)
		seq_printf(s, "rq: (XRC SRQ %u)\n", qp->srq->srqn);
	else if (qp->srq)
		seq_puts(s, "rq: (shared receive queue)\n");
	else
		vrdma_show_ring(s, "rq", &qp->rq, false);
	if (qp->rwqe.valid)
		seq_printf(s, "  receiving into wr_id 0x%llx: %u of %u bytes\n",
			   qp->rwqe.wqe->wr_id, qp->rwqe.offset,
			   qp->rwqe.length);
	seq_printf(s, "responder: expected_psn %u msn %u read_active %d\n",
		   qp->resp.psn, qp->resp.msn, qp->resp.read_active);
	vrdma_show_cq(s, "send_cq", qp->scq);
	vrdma_show_cq(s, "recv_cq", qp->rcq);
	vrdma_qp_unlock(qp);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vrdma_qp);

/**
 * vrdma_debugfs_qp_add() - the QP's file, in its device's directory
 * @qp: a QP with its number and rings, not yet visible to the process
 */
void vrdma_debugfs_qp_add(struct vrdma_qp *qp)
{
	char name[16];

	/* QP1 is created while the device registers, before it is added. */
	vrdma_debugfs_dev_add(qp->vdev);
	snprintf(name, sizeof(name), "qp%u", qp->ibqp.qp_num);
	qp->debugfs = debugfs_create_file(name, 0400, qp->vdev->debugfs, qp,
					  &vrdma_qp_fops);
}

/**
 * vrdma_debugfs_qp_del() - remove the QP's file
 * @qp: the QP, before anything the file shows is freed
 *
 * Waits for readers of the file to finish.
 */
void vrdma_debugfs_qp_del(struct vrdma_qp *qp)
{
	debugfs_remove(qp->debugfs);
	qp->debugfs = NULL;
}

/**
 * vrdma_debugfs_dev_add() - the device's directory, if it has none yet
 * @vdev: a device whose name is set (registering or registered)
 */
void vrdma_debugfs_dev_add(struct vrdma_dev *vdev)
{
	if (!vdev->debugfs)
		vdev->debugfs = debugfs_create_dir(dev_name(&vdev->ibdev.dev),
						   vrdma_debugfs_root);
}

void vrdma_debugfs_dev_del(struct vrdma_dev *vdev)
{
	debugfs_remove(vdev->debugfs);
	vdev->debugfs = NULL;
}

void vrdma_debugfs_init(void)
{
	vrdma_debugfs_root = debugfs_create_dir("vrdma", NULL);
}

void vrdma_debugfs_exit(void)
{
	debugfs_remove(vrdma_debugfs_root);
}
