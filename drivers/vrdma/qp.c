// SPDX-License-Identifier: GPL-2.0
/*
 * Queue pairs: creation, the state machine, and the QP's task.
 *
 * A QP is a send queue and a receive queue (or an SRQ), each a ring shared
 * with the process.  All protocol work of a QP runs in one work item, its
 * task, under qp->mutex: first the packets that arrived (ACKs and read
 * responses for the completer, requests for the responder), then the
 * requester, which turns new SQ WQEs into packets.  One task per QP means
 * the three engines never race on the QP's state, and queue_work() spreads
 * QPs over all CPUs.  The task is queued by the doorbell (post_send), by
 * the receive path, and by timers.
 *
 * The task has two work items on two workqueues.  An event (a packet, a
 * doorbell, a timer) queues qp->task at high priority, so that the answer
 * goes out at once even where a process busy-polls the only CPU, as a
 * NIC's would, and as rdma_rxe's tasklets do.  A run that stops with work
 * left (its budget used up) continues through qp->task_more at normal
 * priority: a QP that always has more to do (a stream under loss) then
 * shares the CPU with ksoftirqd, which delivers the very packets it waits
 * for, instead of starving it (finding 13 of robustness.md).  The mutex
 * keeps the two from running the engines at once.
 *
 * Two things do not wait for the task.  A response (an ACK, a READ
 * response) arriving for a QP nobody is running is completed in the
 * softirq, by the QP's tasklet, as rxe's completer does, so that a process
 * polling the CQ sees its completion without a worker being woken first;
 * and a READ request is answered there, as rxe's responder does, so that
 * the data leaves without a worker being woken either.  After answers the
 * tasklet runs the requester too, as rxe's completer does: a pipeline of
 * requests then flows with neither a worker nor the process's doorbells
 * (vrdma_requester_bh(), no_doorbell in the SQ ring).  The tasklet cannot
 * take the mutex; the engines are owned through a bit (VRDMA_QP_OWNED)
 * instead, which every mutex holder takes too (vrdma_qp_lock()) and the
 * tasklet only tries.
 */
#include <rdma/ib_cache.h>
#include <rdma/uverbs_ioctl.h>

#include "vrdma.h"
#include "trace.h"
#include "pkt.h"

static struct workqueue_struct *vrdma_wq;	/* events, WQ_HIGHPRI */
static struct workqueue_struct *vrdma_wq_more;	/* the rest of a run */

/* Runs of the QP a doorbell makes at most before leaving it to the task. */
#define VRDMA_DOORBELL_ROUNDS	8

/**
 * vrdma_qp_get() - find a QP by number for the receive path
 * @vdev: the device the packet arrived on
 * @qpn: destination QPN from the packet (untrusted)
 *
 * Under the table lock, not just RCU: ib_core frees the QP with kfree()
 * as soon as vrdma_destroy_qp() returns, with no grace period, so a
 * lookup must never touch a QP that destroy has already taken out of the
 * table.  While a QP is in the table, the table's reference keeps it.
 *
 * Context: any.
 * Return: the QP with a reference (vrdma_qp_put()), or NULL.
 */
struct vrdma_qp *vrdma_qp_get(struct vrdma_dev *vdev, u32 qpn)
{
	struct vrdma_qp *qp;
	unsigned long flags;

	xa_lock_irqsave(&vdev->qp_xa, flags);
	qp = xa_load(&vdev->qp_xa, qpn);
	if (qp && !refcount_inc_not_zero(&qp->refs))
		qp = NULL;
	xa_unlock_irqrestore(&vdev->qp_xa, flags);
	return qp;
}

void vrdma_qp_put(struct vrdma_qp *qp)
{
	if (refcount_dec_and_test(&qp->refs))
		complete(&qp->done);
}

/*
 * Take the engines from the tasklet running on another CPU: a few
 * microseconds at most (it waits for nothing, vrdma_qp_bh()).
 */
static void vrdma_qp_own(struct vrdma_qp *qp)
{
	while (test_and_set_bit_lock(VRDMA_QP_OWNED, &qp->owner))
		cpu_relax();
}

/**
 * vrdma_qp_lock() - take the QP's mutex and its engines
 * @qp: the QP
 *
 * Context: process; may sleep.
 */
void vrdma_qp_lock(struct vrdma_qp *qp)
{
	mutex_lock(&qp->mutex);
	vrdma_qp_own(qp);
}

/**
 * vrdma_qp_trylock() - vrdma_qp_lock() if the mutex is free
 * @qp: the QP
 *
 * Context: process.
 * Return: true if taken.
 */
bool vrdma_qp_trylock(struct vrdma_qp *qp)
{
	if (!mutex_trylock(&qp->mutex))
		return false;
	vrdma_qp_own(qp);
	return true;
}

void vrdma_qp_unlock(struct vrdma_qp *qp)
{
	clear_bit_unlock(VRDMA_QP_OWNED, &qp->owner);
	mutex_unlock(&qp->mutex);
}

/**
 * vrdma_qp_schedule() - make the QP's task run soon, for an event
 * @qp: the QP
 *
 * Context: any.
 */
void vrdma_qp_schedule(struct vrdma_qp *qp)
{
	if (!READ_ONCE(qp->destroyed))
		queue_work(vrdma_wq, &qp->task);
}

/**
 * vrdma_qp_continue() - have the QP's task carry on with what a run left
 * @qp: the QP
 *
 * At normal priority: what a QP's own runs keep finding to do must not
 * keep a CPU from everything else.
 *
 * Context: any.
 */
void vrdma_qp_continue(struct vrdma_qp *qp)
{
	if (!READ_ONCE(qp->destroyed))
		queue_work(vrdma_wq_more, &qp->task_more);
}

/*
 * What the receive softirq executes itself, for a QP nobody runs: a
 * response (an ACK, a READ response, an ATOMIC ACK) for the completer, and
 * a READ request for the responder.
 */
static bool vrdma_bh_pkt(struct sk_buff *skb)
{
	return (vrdma_pkt(skb)->mask & VRDMA_OPF_RESP) ||
	       vrdma_pkt(skb)->opcode == IB_OPCODE_RC_RDMA_READ_REQUEST;
}

/* May the softirq execute this packet now?  It owns the engines. */
static bool vrdma_bh_may_run(struct vrdma_qp *qp, struct sk_buff *skb)
{
	/*
	 * Only RC has answers and READs, and so an engine that runs here: a
	 * response to a QP of another type (a forged one: nothing asked for
	 * it) goes to the task, which drops it, and runs no requester here.
	 */
	if (qp->destroyed || !vrdma_bh_pkt(skb) ||
	    qp->ibqp.qp_type != IB_QPT_RC)
		return false;
	if (vrdma_pkt(skb)->mask & VRDMA_OPF_RESP)
		return qp->state == IB_QPS_RTS;
	/*
	 * A READ's target may be in RTR: perftest's server never sends.  The
	 * rest of a long READ being answered goes first, from the task.
	 */
	return (qp->state == IB_QPS_RTS || qp->state == IB_QPS_RTR) &&
	       !qp->resp.read_active;
}

/* The READ being answered is the tasklet's to finish (vrdma_qp_bh()). */
static bool vrdma_bh_reading(struct vrdma_qp *qp)
{
	return qp->resp.read_active && qp->resp.read_bh;
}

/*
 * The QP's softirq run, a tasklet (as rxe's): it executes the responses
 * and READ requests at the head of @rx at once, if nobody runs the QP.
 * Neither needs anything that sleeps (MR pages are pinned, the CQ and the
 * window table take BH-safe locks), and both are short.  Being a tasklet,
 * it runs after the receive softirq has delivered its whole batch of
 * packets, so the answers to a batch leave together.  After answers it
 * runs the requester too.  A run executes and sends VRDMA_BH_BUDGET
 * packets at most and schedules itself again for more of either, so a
 * batch larger than that wakes no task.
 *
 * A READ it starts answering it answers to the end, VRDMA_BH_READ_BURST
 * responses in the run that executes the request and VRDMA_BH_BUDGET in
 * each run after, scheduling itself again on its CPU meanwhile, also
 * while another holds the QP: the responses of one READ then leave from
 * one CPU, in order (two CPUs' receive backlogs deliver in no order
 * between them, veth's among them).  The task answers none of them, and
 * the requests behind them wait (vrdma_responder_waits()).  Whatever else
 * is left (a packet of another kind and all behind it, the error state's
 * flushing) is the task's, queued as for any event; its run ends with the
 * requester's.
 */
static void vrdma_qp_bh(struct tasklet_struct *t)
{
	struct vrdma_qp *qp = from_tasklet(qp, t, bh);
	int budget = VRDMA_BH_BUDGET;
	bool answered = false, again, left, more, reading;
	enum ib_qp_state state;
	struct sk_buff *skb;

	if (test_and_set_bit_lock(VRDMA_QP_OWNED, &qp->owner)) {
		/*
		 * The READ it answers goes on here once the holder lets go
		 * (briefly: it answers no request meanwhile).  Else a holder
		 * that is draining takes the packets in itself.
		 */
		if (READ_ONCE(qp->resp.read_bh)) {
			if (!READ_ONCE(qp->destroyed))
				tasklet_schedule(&qp->bh);
		} else if (!READ_ONCE(qp->draining)) {
			vrdma_qp_schedule(qp);
		}
		return;
	}
	state = qp->state;
	if (vrdma_bh_reading(qp))
		vrdma_responder_reads(qp, VRDMA_BH_BUDGET);
	while (!vrdma_bh_reading(qp) && budget-- &&
	       (skb = skb_dequeue(&qp->rx))) {
		if (!vrdma_bh_may_run(qp, skb)) {
			/* Back to the head: only the owner dequeues. */
			skb_queue_head(&qp->rx, skb);
			break;
		}
		if (vrdma_pkt(skb)->mask & VRDMA_OPF_RESP) {
			vrdma_count(qp->vdev, VRDMA_CNT_SOFTIRQ_RESP);
			vrdma_completer(qp, skb);
			answered = true;
		} else {
			vrdma_count(qp->vdev, VRDMA_CNT_SOFTIRQ_READ);
			vrdma_responder(qp, skb);
			WRITE_ONCE(qp->resp.read_bh, true);
			vrdma_responder_reads(qp, VRDMA_BH_READ_BURST);
		}
	}
	/*
	 * Stopped by the budget or a READ still to answer, the run leaves
	 * the rest to its next one: the softirq takes turns with other work,
	 * and ksoftirqd takes over if it keeps coming.  Stopped by a packet
	 * it may not run, it leaves it to the task.
	 */
	reading = vrdma_bh_reading(qp);
	if (!reading && qp->resp.read_bh) {
		WRITE_ONCE(qp->resp.read_bh, false);
		smp_mb();	/* pairs with vrdma_qp_rcv() */
	}
	left = !skb_queue_empty(&qp->rx);
	again = reading || (left && budget < 0);
	more = qp->state != state || (!reading && left && budget >= 0);
	/*
	 * Answers run the requester: they may have opened the window, and
	 * WQEs posted without a doorbell wait for them (vrdma_requester()).
	 * Only RC QPs in RTS get answers here (vrdma_bh_may_run()), and a
	 * run it left over is for RTS too; when the task is queued anyway,
	 * its run ends with the requester.
	 */
	if ((answered || qp->req.bh_more) && !more &&
	    qp->state == IB_QPS_RTS) {
		vrdma_requester_bh(qp);
		again |= qp->req.bh_more;
	}
	clear_bit_unlock(VRDMA_QP_OWNED, &qp->owner);
	if (more)
		vrdma_qp_schedule(qp);
	if ((reading || (again && !more)) && !READ_ONCE(qp->destroyed))
		tasklet_schedule(&qp->bh);
}

/*
 * Queue a packet for the QP.  True if the holder of the mutex is draining
 * the queue and will take it in, or if the queue is full and the packet
 * dropped; else the caller must see that the task runs.  A full queue
 * needs no wakeup: whoever queued its first packet saw to a run, which
 * takes in all of it.  The length is read unlocked: the bound may be
 * passed by a packet per CPU.
 */
static bool vrdma_qp_queue_rx(struct vrdma_qp *qp, struct sk_buff *skb)
{
	if (skb_queue_len_lockless(&qp->rx) >= VRDMA_RX_QUEUE_MAX) {
		vrdma_count(qp->vdev, VRDMA_CNT_RX_QUEUE_FULL);
		kfree_skb(skb);
		return true;
	}
	skb_queue_tail(&qp->rx, skb);
	smp_mb();	/* pairs with vrdma_qp_drained() */
	return READ_ONCE(qp->draining);
}

/**
 * vrdma_qp_rcv() - hand a received packet to its QP
 * @qp: the destination QP, referenced by the caller
 * @skb: the checked packet (see struct vrdma_pkt); consumed
 *
 * Context: any, typically softirq.  The packet is queued: for the task or
 * doorbell running the QP right now, which takes it in before it lets go
 * (as for vrdma_qp_rcv_local()), else, a response or a READ request
 * arriving in the softirq, for the QP's tasklet (vrdma_qp_bh()), and
 * anything else for the QP's task.
 */
void vrdma_qp_rcv(struct vrdma_qp *qp, struct sk_buff *skb)
{
	bool bh = in_serving_softirq() && vrdma_bh_pkt(skb);

	if (READ_ONCE(qp->destroyed)) {
		kfree_skb(skb);
		return;
	}
	/* Once queued, the skb may be gone: the task can run elsewhere. */
	if (vrdma_qp_queue_rx(qp, skb))
		return;
	/*
	 * While the tasklet answers a READ it is scheduled on its own CPU
	 * and sees this packet (the barrier of vrdma_qp_queue_rx() pairs
	 * with its own): scheduled here, it would continue on this CPU.
	 */
	if (bh && !READ_ONCE(qp->resp.read_bh))
		tasklet_schedule(&qp->bh);
	else if (!bh)
		vrdma_qp_schedule(qp);
}

static void vrdma_qp_event(struct vrdma_qp *qp, enum ib_event_type type)
{
	struct ib_qp *ibqp = &qp->ibqp;
	struct ib_event ev = {
		.device = ibqp->device,
		.element.qp = ibqp,
		.event = type,
	};

	if (ibqp->event_handler)
		ibqp->event_handler(&ev, ibqp->qp_context);
}

/**
 * vrdma_qp_error() - move the QP to the error state
 * @qp: the QP, mutex held
 * @event: the affiliated asynchronous event to raise, or 0 for none
 *
 * Every outstanding WQE of the SQ and RQ completes with
 * IB_WC_WR_FLUSH_ERR, in order; WQEs posted later are flushed as they come.
 * A QP on an SRQ flushes only the receive WQE it holds (the others belong
 * to the SRQ) and then raises IB_EVENT_QP_LAST_WQE_REACHED: it takes no
 * more, so its owner may destroy it without losing any.
 */
void vrdma_qp_error(struct vrdma_qp *qp, enum ib_event_type event)
{
	bool entering = qp->state != IB_QPS_ERR;

	vrdma_qp_assert_owned(qp);

	if (entering) {
		trace_vrdma_qp_error(qp, event);
		qp->state = IB_QPS_ERR;
		del_timer(&qp->rnr_timer);
		del_timer(&qp->retrans_timer);
		if (event)
			vrdma_qp_event(qp, event);
	}
	vrdma_flush_sq(qp);
	vrdma_flush_rq(qp);
	if (entering && qp->srq)
		vrdma_qp_event(qp, IB_EVENT_QP_LAST_WQE_REACHED);
}

/* Copy the next WQE out of the QP's own RQ: as vrdma_srq_take(). */
static int vrdma_rq_take(struct vrdma_qp *qp, struct vrdma_recv_wqe *wqe)
{
	struct vrdma_queue *q = &qp->rq;
	u32 count;

	if (vrdma_queue_count(q, &count))
		return -EIO;
	if (!count)
		return 0;
	memcpy(wqe, vrdma_queue_slot(q, q->kidx),
	       VRDMA_RECV_WQE_HDR_SIZE +
	       qp->max_recv_sge * sizeof(struct vrdma_sge));
	vrdma_queue_consume(q, 1);
	return 1;
}

/**
 * vrdma_qp_sq_error() - a send WQE of a UC or UD QP failed: stop the SQ
 * @qp: the QP, mutex held
 *
 * The QP goes to SQE (IBA 10.3.1): the WQEs after the failed one are
 * flushed, and so are those posted later, while receives go on; modify_qp
 * to RTS starts the SQ again.  RC has no such state: its errors are
 * vrdma_qp_error().
 */
void vrdma_qp_sq_error(struct vrdma_qp *qp)
{
	vrdma_qp_assert_owned(qp);

	if (qp->state == IB_QPS_ERR)
		return;
	qp->state = IB_QPS_SQE;
	del_timer(&qp->rnr_timer);
	del_timer(&qp->retrans_timer);
	vrdma_flush_sq(qp);
}

/**
 * vrdma_qp_receives() - whether the QP's receive side takes packets
 * @qp: the QP, mutex held
 *
 * Return: true from RTR on, until ERR; in SQE too (UC, UD).
 */
bool vrdma_qp_receives(struct vrdma_qp *qp)
{
	switch (qp->state) {
	case IB_QPS_RTR:
	case IB_QPS_RTS:
	case IB_QPS_SQD:
	case IB_QPS_SQE:
		return true;
	default:
		return false;
	}
}

/**
 * vrdma_take_rwqe() - copy the next receive WQE out of the RQ or the SRQ
 * @qp: the QP, mutex held; qp->rwqe must be free
 *
 * The responder's one way to a receive WQE, whether the QP has an RQ or
 * shares an SRQ.  The WQE is copied before it is looked at and its slot is
 * returned at once: the process may reuse it while the message is being
 * received.  A malformed WQE (more SGEs than granted) completes with
 * IB_WC_LOC_QP_OP_ERR; it and a garbage ring put the QP in error.
 *
 * Return: true if a WQE was taken, false if none is posted (RNR) or the QP
 * is now in error.
 */
bool vrdma_take_rwqe(struct vrdma_qp *qp)
{
	struct vrdma_rwqe *rw = &qp->rwqe;
	u32 max_sge, i;
	u64 total = 0;
	int ret;

	if (qp->srq) {
		ret = vrdma_srq_take(qp->srq, rw->wqe);
		max_sge = qp->srq->max_sge;
		/* The SRQ's WQEs are checked against the SRQ's PD. */
		rw->pd = to_vpd(qp->srq->ibsrq.pd);
	} else {
		ret = vrdma_rq_take(qp, rw->wqe);
		max_sge = qp->max_recv_sge;
		rw->pd = qp->pd;
	}
	if (ret <= 0) {
		if (ret) {
			vrdma_count(qp->vdev, VRDMA_CNT_BAD_WQE);
			vrdma_qp_error(qp, IB_EVENT_QP_FATAL);
		}
		return false;
	}

	/* The copy is ours now: check it. */
	if (rw->wqe->num_sge > max_sge) {
		struct vrdma_cqe cqe = {
			.wr_id = rw->wqe->wr_id,
			.status = IB_WC_LOC_QP_OP_ERR,
			.opcode = IB_WC_RECV,
			.qp_num = qp->ibqp.qp_num,
		};

		vrdma_count(qp->vdev, VRDMA_CNT_BAD_WQE);
		vrdma_cq_post(qp->rcq, &cqe, false);
		vrdma_qp_error(qp, IB_EVENT_QP_FATAL);
		return false;
	}
	for (i = 0; i < rw->wqe->num_sge; i++)
		total += rw->wqe->sge[i].length;
	rw->length = min_t(u64, total, U32_MAX);
	rw->offset = 0;
	rw->valid = true;
	trace_vrdma_rq_wqe(qp);
	return true;
}

/*
 * One run of the QP's engines, mutex held: the packets that arrived, the
 * read responses owed, the requester.  Returns true if work is left that
 * needs another run (beyond packets still queued).
 */
static bool vrdma_qp_run(struct vrdma_qp *qp)
{
	struct sk_buff *skb;
	int budget = 256;	/* packets per run, then let others in */
	bool again;

	lockdep_assert_held(&qp->mutex);
	while (budget-- && (skb = skb_dequeue(&qp->rx))) {
		if (qp->state == IB_QPS_RESET || qp->state == IB_QPS_INIT) {
			kfree_skb(skb);
			continue;
		}
		if (vrdma_pkt(skb)->mask & VRDMA_OPF_RESP) {
			vrdma_completer(qp, skb);
			continue;
		}
		if (vrdma_responder_waits(qp, skb)) {
			/* Back to the head: after the READ's responses. */
			skb_queue_head(&qp->rx, skb);
			break;
		}
		vrdma_responder(qp, skb);
		WRITE_ONCE(qp->resp.read_bh, false);
	}
	/* A READ the tasklet answers it finishes; its queue waits for it. */
	again = !vrdma_bh_reading(qp) &&
		vrdma_responder_reads(qp, VRDMA_READ_BURST);
	vrdma_requester(qp);
	if (qp->state == IB_QPS_ERR)
		vrdma_flush_rq(qp);
	return again;
}

/*
 * The holder of the mutex stops taking in packets: from here on whoever
 * queues one queues the task too.  The barrier pairs with the one in
 * vrdma_qp_queue_rx(): either the sender sees @draining clear, or the
 * holder, looking at the queue after this, sees the packet.
 */
static void vrdma_qp_drained(struct vrdma_qp *qp)
{
	WRITE_ONCE(qp->draining, false);
	smp_mb();	/* pairs with vrdma_qp_queue_rx() */
}

/*
 * After a run that let go of the mutex: the rest of its work continues at
 * normal priority; packets that came in meanwhile have queued the task
 * themselves (this makes sure of it).
 */
static void vrdma_qp_after_run(struct vrdma_qp *qp, bool again)
{
	if (again)
		vrdma_qp_continue(qp);
	else if (!skb_queue_empty(&qp->rx) && !READ_ONCE(qp->resp.read_bh))
		vrdma_qp_schedule(qp);
}

static void vrdma_qp_do_task(struct vrdma_qp *qp)
{
	bool again;

	vrdma_qp_lock(qp);
	/* A QP being destroyed arms no timer and sends nothing. */
	if (qp->destroyed) {
		vrdma_qp_unlock(qp);
		return;
	}
	WRITE_ONCE(qp->draining, true);
	again = vrdma_qp_run(qp);
	vrdma_qp_drained(qp);
	vrdma_qp_unlock(qp);

	/* More to do: run again after others had their turn. */
	vrdma_qp_after_run(qp, again);
}

static void vrdma_qp_task(struct work_struct *work)
{
	vrdma_qp_do_task(container_of(work, struct vrdma_qp, task));
}

static void vrdma_qp_task_more(struct work_struct *work)
{
	vrdma_qp_do_task(container_of(work, struct vrdma_qp, task_more));
}

/*
 * An inline run is in progress on this CPU (vrdma_qp_rcv_local()): the
 * QP it runs delivers its own packets through the workqueue, which keeps
 * the nesting at one level, and the stack small, whatever the QPs send.
 */
static DEFINE_PER_CPU(unsigned int, vrdma_inline_runs);

/**
 * vrdma_qp_rcv_local() - hand a packet sent inside the driver to its QP,
 *	and run the QP at once if it is idle
 * @qp: the destination QP, referenced by the caller
 * @skb: the checked packet; consumed
 *
 * A packet between two QPs of this host needs no other CPU: running the
 * destination QP's engines right here, in the sender's context, places the
 * data, writes the CQE and sends the ACK back before the sender's doorbell
 * returns, as a NIC would, without waking a worker (under TCG a wakeup can
 * cost a whole scheduler tick).  Only when the sender's context allows it
 * (preemptible, so not under RCU or a spinlock), only one level deep, and
 * only if nobody holds the QP (a trylock: the sender may hold it itself,
 * loopback QP, or be its peer waiting); otherwise the packet is queued for
 * the QP's task as from the wire.
 *
 * Context: any; runs the QP only in process context.
 */
void vrdma_qp_rcv_local(struct vrdma_qp *qp, struct sk_buff *skb)
{
	bool ran = false, again = false;

	if (READ_ONCE(qp->destroyed)) {
		kfree_skb(skb);
		return;
	}
	if (vrdma_qp_queue_rx(qp, skb))
		return;		/* the holder takes it in */
	if (!preemptible()) {
		vrdma_qp_schedule(qp);
		return;
	}

	migrate_disable();
	if (!this_cpu_read(vrdma_inline_runs) && vrdma_qp_trylock(qp)) {
		this_cpu_inc(vrdma_inline_runs);
		if (!qp->destroyed)
			again = vrdma_qp_run(qp);
		this_cpu_dec(vrdma_inline_runs);
		vrdma_qp_unlock(qp);
		ran = true;
	}
	migrate_enable();
	if (ran)
		vrdma_qp_after_run(qp, again);
	else
		vrdma_qp_schedule(qp);
}

static void vrdma_rnr_timer(struct timer_list *t)
{
	struct vrdma_qp *qp = from_timer(qp, t, rnr_timer);

	WRITE_ONCE(qp->req.rnr_wait, false);
	vrdma_qp_schedule(qp);
}

static void vrdma_retrans_timer(struct timer_list *t)
{
	struct vrdma_qp *qp = from_timer(qp, t, retrans_timer);

	WRITE_ONCE(qp->req.timed_out, true);
	vrdma_qp_schedule(qp);
}

/* Round a ring size up to a power of two, at least 1. */
static u32 vrdma_ring_entries(u32 wr)
{
	return roundup_pow_of_two(max(wr, 1U));
}

static int vrdma_qp_check_cap(struct vrdma_dev *vdev, struct ib_qp_cap *cap,
			      bool has_srq)
{
	if (cap->max_send_wr > vdev->attr.max_qp_wr ||
	    cap->max_send_sge > VRDMA_MAX_SGE ||
	    cap->max_inline_data > VRDMA_MAX_INLINE)
		return -EINVAL;
	if (!has_srq && (cap->max_recv_wr > vdev->attr.max_qp_wr ||
			 cap->max_recv_sge > VRDMA_MAX_SGE))
		return -EINVAL;
	return 0;
}

/* Size the rings, allocate them and the kernel's copies of the WQEs. */
static int vrdma_qp_alloc_queues(struct vrdma_qp *qp, struct ib_qp_cap *cap,
				 struct vrdma_ucontext *uc,
				 struct vrdma_create_qp_resp *resp)
{
	gfp_t gfp = uc ? VRDMA_GFP_USER : GFP_KERNEL;
	u32 n, stride, i;
	int ret;

	stride = roundup_pow_of_two(VRDMA_SEND_WQE_HDR_SIZE +
				    max(cap->max_send_sge *
					(u32)sizeof(struct vrdma_sge),
					cap->max_inline_data));
	n = vrdma_ring_entries(cap->max_send_wr);
	ret = vrdma_queue_init(&qp->sq, uc, n, stride, &resp->sq);
	if (ret)
		return ret;
	qp->max_send_sge = min_t(u32, VRDMA_MAX_SGE,
				 (stride - VRDMA_SEND_WQE_HDR_SIZE) /
				 sizeof(struct vrdma_sge));
	qp->max_inline = min_t(u32, VRDMA_MAX_INLINE,
			       stride - VRDMA_SEND_WQE_HDR_SIZE);
	cap->max_send_wr = n;
	cap->max_send_sge = qp->max_send_sge;
	cap->max_inline_data = qp->max_inline;

	qp->swqe = kvcalloc(n, sizeof(*qp->swqe), gfp);
	/*
	 * kmalloc while small: every vmalloc'ed area freed adds to the lazy
	 * purge, whose kernel TLB flush interrupts every CPU.
	 */
	qp->swqe_buf = kvmalloc_array(n, stride, gfp);
	if (!qp->swqe || !qp->swqe_buf)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		qp->swqe[i].wqe = qp->swqe_buf + (size_t)i * stride;

	qp->rwqe.wqe = kmalloc(VRDMA_RECV_WQE_HDR_SIZE +
			       VRDMA_MAX_SGE * sizeof(struct vrdma_sge),
			       gfp);
	if (!qp->rwqe.wqe)
		return -ENOMEM;

	if (qp->srq) {
		cap->max_recv_wr = 0;
		cap->max_recv_sge = 0;
		return 0;
	}
	stride = roundup_pow_of_two(VRDMA_RECV_WQE_HDR_SIZE +
				    max(cap->max_recv_sge, 1U) *
				    sizeof(struct vrdma_sge));
	n = vrdma_ring_entries(cap->max_recv_wr);
	ret = vrdma_queue_init(&qp->rq, uc, n, stride, &resp->rq);
	if (ret)
		return ret;
	qp->max_recv_sge = min_t(u32, VRDMA_MAX_SGE,
				 (stride - VRDMA_RECV_WQE_HDR_SIZE) /
				 sizeof(struct vrdma_sge));
	cap->max_recv_wr = n;
	cap->max_recv_sge = qp->max_recv_sge;
	return 0;
}

static void vrdma_qp_free_queues(struct vrdma_qp *qp)
{
	vrdma_queue_destroy(&qp->sq);
	if (!qp->srq)
		vrdma_queue_destroy(&qp->rq);
	kvfree(qp->swqe);
	kvfree(qp->swqe_buf);
	kfree(qp->rwqe.wqe);
	kfree(qp->resp.res);
}

static void vrdma_qp_reset(struct vrdma_qp *qp)
{
	struct vrdma_rd_atomic *res = qp->resp.res;
	u32 res_num = qp->resp.res_num;

	/* Posted WQEs are discarded without completions. */
	vrdma_queue_reset(&qp->sq);
	WRITE_ONCE(qp->sq.ring->no_doorbell, 0);
	if (!qp->srq)
		vrdma_queue_reset(&qp->rq);
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->resp, 0, sizeof(qp->resp));
	/* The responder resources stay allocated, emptied. */
	qp->resp.res = res;
	qp->resp.res_num = res_num;
	vrdma_resp_res_reset(qp);
	/* No message in progress: an opcode vrdma_opcode[] does not know. */
	qp->resp.opcode = 0xff;
	qp->req.fetch = qp->sq.kidx;
	qp->req.cur = qp->sq.kidx;
	qp->rwqe.valid = false;
	del_timer(&qp->rnr_timer);
	del_timer(&qp->retrans_timer);
	skb_queue_purge(&qp->rx);
}

/**
 * vrdma_create_qp() - create a QP in the RESET state
 * @ibqp: ib_core's QP, embedded in ours
 * @init: type, CQs, SRQ and capabilities; capabilities are updated to what
 *	was granted
 * @udata: the response carries struct vrdma_create_qp_resp; NULL for a
 *	kernel consumer's QP, whose rings are in kernel memory (kverbs.c)
 *
 * RC, UC and UD QPs are created for processes and kernel consumers; the
 * GSI QP (QP1, IB_QPT_GSI, which ib_mad creates for the port) only for
 * the kernel, always with number 1.
 *
 * Return: 0, -EOPNOTSUPP for QP types and flags not implemented, -EINVAL
 * for capabilities beyond the device's, -EBUSY for a second GSI QP,
 * -ENOMEM past max_qp.
 */
int vrdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata)
{
	struct vrdma_dev *vdev = to_vdev(ibqp->device);
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_create_qp_resp resp = {};
	struct vrdma_ucontext *uc;
	u32 qpn;
	int ret;

	if ((init->qp_type != IB_QPT_RC && init->qp_type != IB_QPT_UC &&
	     init->qp_type != IB_QPT_UD &&
	     (init->qp_type != IB_QPT_GSI || udata)) || init->create_flags)
		return -EOPNOTSUPP;
	if (init->qp_type == IB_QPT_GSI && init->port_num != VRDMA_PORT)
		return -EINVAL;
	ret = vrdma_qp_check_cap(vdev, &init->cap, !!init->srq);
	if (ret)
		return ret;
	if (udata && udata->outlen < sizeof(resp))
		return -EINVAL;
	uc = udata ? rdma_udata_to_drv_context(udata, struct vrdma_ucontext,
					       ibuc) : NULL;

	if (atomic_inc_return(&vdev->num_qp) > vdev->attr.max_qp) {
		ret = -ENOMEM;
		goto err_count;
	}

	qp->vdev = vdev;
	qp->pd = to_vpd(ibqp->pd);
	qp->scq = to_vcq(init->send_cq);
	qp->rcq = to_vcq(init->recv_cq);
	qp->srq = init->srq ? to_vsrq(init->srq) : NULL;
	qp->sq_sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	qp->state = IB_QPS_RESET;
	spin_lock_init(&qp->sq_lock);
	spin_lock_init(&qp->rq_lock);
	mutex_init(&qp->mutex);
	skb_queue_head_init(&qp->rx);
	INIT_WORK(&qp->task, vrdma_qp_task);
	INIT_WORK(&qp->task_more, vrdma_qp_task_more);
	tasklet_setup(&qp->bh, vrdma_qp_bh);
	timer_setup(&qp->rnr_timer, vrdma_rnr_timer, 0);
	timer_setup(&qp->retrans_timer, vrdma_retrans_timer, 0);
	refcount_set(&qp->refs, 1);
	init_completion(&qp->done);

	ret = dst_cache_init(&qp->av.dst_cache, GFP_KERNEL);
	if (ret)
		goto err_count;
	ret = vrdma_qp_alloc_queues(qp, &init->cap, uc, &resp);
	if (ret)
		goto err_queues;

	if (init->qp_type == IB_QPT_GSI) {
		/* Reserved (a NULL entry) until complete, as below. */
		qpn = VRDMA_GSI_QPN;
		ret = xa_insert_irq(&vdev->qp_xa, qpn, NULL, GFP_KERNEL);
	} else {
		ret = xa_alloc_cyclic_irq(&vdev->qp_xa, &qpn, NULL,
					  XA_LIMIT(VRDMA_MIN_QPN, VRDMA_MAX_QPN),
					  &vdev->qp_next, GFP_KERNEL);
	}
	if (ret < 0)
		goto err_queues;
	ibqp->qp_num = qpn;
	resp.qpn = qpn;

	if (udata) {
		ret = ib_copy_to_udata(udata, &resp, sizeof(resp));
		if (ret)
			goto err_xa;
	}
	vrdma_qp_reset(qp);
	/* Visible to the receive path only when complete. */
	xa_store_irq(&vdev->qp_xa, qpn, qp, GFP_KERNEL);
	vrdma_debugfs_qp_add(qp);
	return 0;

err_xa:
	xa_erase_irq(&vdev->qp_xa, qpn);
err_queues:
	vrdma_qp_free_queues(qp);
	dst_cache_destroy(&qp->av.dst_cache);
err_count:
	atomic_dec(&vdev->num_qp);
	return ret;
}

/* Check the values of the attributes in @mask; states are checked apart. */
static int vrdma_qp_check_attr(struct vrdma_qp *qp, struct ib_qp_attr *attr,
			       int mask)
{
	if ((mask & IB_QP_PORT) && attr->port_num != VRDMA_PORT)
		return -EINVAL;
	if ((mask & IB_QP_PKEY_INDEX) && attr->pkey_index >= VRDMA_MAX_PKEYS)
		return -EINVAL;
	if ((mask & IB_QP_PATH_MTU) &&
	    (attr->path_mtu < IB_MTU_256 || attr->path_mtu > IB_MTU_4096))
		return -EINVAL;
	if ((mask & IB_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > VRDMA_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IB_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > VRDMA_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IB_QP_ACCESS_FLAGS) &&
	    (attr->qp_access_flags & ~(IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ |
				       IB_ACCESS_REMOTE_ATOMIC |
				       IB_ACCESS_LOCAL_WRITE)))
		return -EINVAL;
	if ((mask & IB_QP_RETRY_CNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IB_QP_RNR_RETRY) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IB_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IB_QP_TIMEOUT) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & IB_QP_DEST_QPN) && attr->dest_qp_num > VRDMA_MAX_QPN)
		return -EINVAL;
	return 0;
}

/* Keep the attributes for query_qp; the path is resolved separately. */
static void vrdma_qp_store_attr(struct vrdma_qp *qp, struct ib_qp_attr *attr,
				int mask)
{
	struct ib_qp_attr *a = &qp->attr;

	if (mask & IB_QP_ACCESS_FLAGS)
		a->qp_access_flags = attr->qp_access_flags;
	if (mask & IB_QP_PKEY_INDEX)
		a->pkey_index = attr->pkey_index;
	if (mask & IB_QP_PORT)
		a->port_num = attr->port_num;
	if (mask & IB_QP_QKEY)
		a->qkey = attr->qkey;
	if (mask & IB_QP_PATH_MTU)
		a->path_mtu = attr->path_mtu;
	if (mask & IB_QP_TIMEOUT)
		a->timeout = attr->timeout;
	if (mask & IB_QP_RETRY_CNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & IB_QP_RNR_RETRY)
		a->rnr_retry = attr->rnr_retry;
	if (mask & IB_QP_RQ_PSN) {
		a->rq_psn = attr->rq_psn & VRDMA_MAX_QPN;
		qp->resp.psn = a->rq_psn;
	}
	if (mask & IB_QP_MAX_QP_RD_ATOMIC)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IB_QP_MIN_RNR_TIMER)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & IB_QP_SQ_PSN) {
		a->sq_psn = attr->sq_psn & VRDMA_MAX_QPN;
		qp->req.psn = a->sq_psn;
		qp->req.max_psn = a->sq_psn;
		qp->req.una = a->sq_psn;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & IB_QP_DEST_QPN)
		a->dest_qp_num = attr->dest_qp_num;
	if (mask & IB_QP_AV)
		a->ah_attr = attr->ah_attr;
	if (mask & IB_QP_EN_SQD_ASYNC_NOTIFY)
		a->en_sqd_async_notify = attr->en_sqd_async_notify;
}

/*
 * The path MTU in use: what was asked, at most what the netdev carries.
 * Not through vrdma_query_port(): that takes the RTNL, and the QP's mutex
 * is held here (lockdep: rtnl_mutex -> rdma_cm's qp_mutex -> qp->mutex).
 */
static u32 vrdma_qp_mtu(struct vrdma_qp *qp, enum ib_mtu path_mtu)
{
	enum ib_mtu mtu = path_mtu ? path_mtu : IB_MTU_1024;

	return ib_mtu_enum_to_int(min(mtu, vrdma_active_mtu(qp->vdev->ndev)));
}

/*
 * Are messages of the SQ begun and not completed?  Their packets were cut
 * at qp->mtu, and a resend finds its place in a message from the PSN
 * distance times qp->mtu (vrdma_rewind()), as the completer finds READ
 * responses: the MTU must not change under them.
 */
static bool vrdma_qp_sq_busy(struct vrdma_qp *qp)
{
	if (qp->sq.kidx != qp->req.cur)
		return true;
	return qp->req.cur != qp->req.fetch &&
	       qp->swqe[qp->req.cur & qp->sq.mask].state != VRDMA_SWQE_NEW;
}

/**
 * vrdma_modify_qp() - change attributes and state (ibv_modify_qp)
 * @ibqp: the QP
 * @attr: new values
 * @mask: IB_QP_* attributes to change
 * @udata: no driver data
 *
 * The transition and the attributes it requires or allows are checked
 * against the IBA tables (ib_modify_qp_is_ok()).
 *
 * Return: 0, -EINVAL, -ENOMEM for the responder resources, or -EBUSY for a
 * path MTU change while messages are outstanding, with the QP unchanged.
 */
int vrdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_rd_atomic *res = NULL;
	enum ib_qp_state cur, new;
	int ret;

	if (mask & ~IB_QP_ATTR_STANDARD_BITS)
		return -EOPNOTSUPP;

	vrdma_qp_lock(qp);
	cur = (mask & IB_QP_CUR_STATE) ? attr->cur_qp_state : qp->state;
	new = (mask & IB_QP_STATE) ? attr->qp_state : cur;
	ret = -EINVAL;
	if (cur != qp->state ||
	    !ib_modify_qp_is_ok(cur, new, ibqp->qp_type, mask))
		goto out;
	ret = vrdma_qp_check_attr(qp, attr, mask);
	if (ret)
		goto out;
	/*
	 * A new path (SQD to SQD) may bring a new MTU, the netdev's having
	 * changed since: taken only once every message begun is completed.
	 */
	if ((mask & (IB_QP_PATH_MTU | IB_QP_AV)) && vrdma_qp_sq_busy(qp) &&
	    vrdma_qp_mtu(qp, (mask & IB_QP_PATH_MTU) ? attr->path_mtu :
			 qp->attr.path_mtu) != qp->mtu) {
		ret = -EBUSY;
		goto out;
	}
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC) {
		res = vrdma_resp_res_alloc(attr->max_dest_rd_atomic);
		if (IS_ERR(res)) {
			ret = PTR_ERR(res);
			goto out;
		}
	}
	if (mask & IB_QP_AV) {
		ret = vrdma_av_set(&qp->av, &attr->ah_attr);
		if (ret) {
			kfree(res);
			goto out;
		}
	}
	if (new == IB_QPS_RESET && cur != IB_QPS_RESET)
		vrdma_qp_reset(qp);
	if (mask & IB_QP_MAX_DEST_RD_ATOMIC)
		vrdma_resp_res_install(qp, res, attr->max_dest_rd_atomic);
	vrdma_qp_store_attr(qp, attr, mask);
	if (mask & (IB_QP_AV | IB_QP_DEST_QPN))
		qp->av.sport = cpu_to_be16(rdma_get_udp_sport(qp->av.flow_label,
							      ibqp->qp_num,
							      qp->attr.dest_qp_num));
	if (mask & (IB_QP_PATH_MTU | IB_QP_AV))
		qp->mtu = vrdma_qp_mtu(qp, qp->attr.path_mtu);

	if (!(mask & IB_QP_STATE) || new == cur)
		goto out;
	switch (new) {
	case IB_QPS_ERR:
		vrdma_qp_error(qp, 0);
		break;
	case IB_QPS_SQD:
		qp->state = new;
		qp->req.sqd_event = qp->attr.en_sqd_async_notify;
		vrdma_qp_schedule(qp);
		break;
	case IB_QPS_RTS:
		qp->state = new;
		/* WQEs may have been posted before: start on them. */
		vrdma_qp_schedule(qp);
		break;
	default:
		qp->state = new;
		break;
	}
out:
	vrdma_qp_unlock(qp);
	return ret;
}

/**
 * vrdma_query_qp() - report attributes (ibv_query_qp)
 * @ibqp: the QP
 * @attr: filled
 * @mask: which attributes are wanted; all are filled
 * @init: filled with the creation attributes
 *
 * Return: 0
 */
int vrdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init)
{
	struct vrdma_qp *qp = to_vqp(ibqp);

	vrdma_qp_lock(qp);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->sq_draining = qp->state == IB_QPS_SQD &&
			    qp->req.cur != qp->sq.kidx;
	attr->cap.max_send_wr = qp->sq.num_entries;
	attr->cap.max_send_sge = qp->max_send_sge;
	attr->cap.max_inline_data = qp->max_inline;
	attr->cap.max_recv_wr = qp->srq ? 0 : qp->rq.num_entries;
	attr->cap.max_recv_sge = qp->srq ? 0 : qp->max_recv_sge;
	/* The PSNs as they are now ("rdma res show qp" reports them). */
	attr->sq_psn = qp->req.psn;
	attr->rq_psn = qp->resp.psn;
	vrdma_qp_unlock(qp);

	memset(init, 0, sizeof(*init));
	init->qp_type = ibqp->qp_type;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->sq_sig_type = qp->sq_sig_all ? IB_SIGNAL_ALL_WR :
					     IB_SIGNAL_REQ_WR;
	return 0;
}

/**
 * vrdma_destroy_qp() - destroy a QP, with traffic in flight or not
 * @ibqp: the QP
 * @udata: unused
 *
 * No new packet can find the QP once it is out of the table; we wait for
 * those that did, stop the task and the timers, and only then free.  No
 * completions are generated.  (rxe once freed a QP under a running
 * retransmission timer; the destroyed flag, set under the mutex, is what
 * keeps the task from re-arming one here.)
 *
 * Return: 0
 */
int vrdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	struct vrdma_dev *vdev = qp->vdev;

	vrdma_debugfs_qp_del(qp);
	/* No multicast group may reach the QP any more. */
	vrdma_mcast_qp_destroy(qp);
	vrdma_qp_lock(qp);
	WRITE_ONCE(qp->destroyed, true);
	vrdma_qp_unlock(qp);

	xa_erase_irq(&vdev->qp_xa, ibqp->qp_num);
	vrdma_qp_put(qp);
	wait_for_completion(&qp->done);
	/*
	 * Scheduled only by packets, which held references, and by itself,
	 * which it no longer does once the QP is marked destroyed.
	 */
	tasklet_kill(&qp->bh);

	/*
	 * Only the task and its timers arm timers, and the task now returns
	 * at once: after this nothing of the QP can run again.
	 */
	del_timer_sync(&qp->rnr_timer);
	del_timer_sync(&qp->retrans_timer);
	/* Neither queues the other once the QP is marked destroyed. */
	cancel_work_sync(&qp->task);
	cancel_work_sync(&qp->task_more);
	skb_queue_purge(&qp->rx);

	if (qp->av.sgid_attr)
		rdma_put_gid_attr(qp->av.sgid_attr);
	dst_cache_destroy(&qp->av.dst_cache);
	vrdma_qp_free_queues(qp);
	atomic_dec(&vdev->num_qp);
	return 0;
}

/**
 * vrdma_post_send() - the doorbell of a user QP's send queue
 * @ibqp: the QP
 * @wr: NULL: the WQEs are in the SQ ring already; for a kernel QP, the
 *	work requests to post (vrdma_kpost_send())
 * @bad_wr: set to @wr on error
 *
 * The provider refuses to post before RTS; WQEs already in the ring wait
 * for RTS (the requester ignores the SQ until then), so the doorbell itself
 * never fails.
 *
 * When the QP's task is not running, the caller runs the QP itself (the
 * requester, and the ACKs that came back meanwhile): the first packets
 * leave before post_send returns, as from a NIC, and a UD or UC WQE is
 * complete by then, as is an RC WQE to a local peer (vrdma_qp_rcv_local()).
 * Otherwise the task is queued (again), so that it looks at the SQ once
 * more before it ends.
 *
 * Return: 0, or -EINVAL for work requests passed the kernel way to a user
 * QP.
 */
int vrdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr)
{
	struct vrdma_qp *qp = to_vqp(ibqp);
	bool again = false;
	int rounds;

	if (vrdma_queue_is_kernel(&qp->sq))
		return vrdma_kpost_send(qp, wr, bad_wr);
	if (wr) {
		*bad_wr = wr;
		return -EINVAL;
	}
	trace_vrdma_doorbell(qp);
	vrdma_count(qp->vdev, VRDMA_CNT_DOORBELLS);
	if (!vrdma_qp_trylock(qp)) {
		vrdma_qp_schedule(qp);
		return 0;
	}
	if (!qp->destroyed) {
		WRITE_ONCE(qp->draining, true);
		/*
		 * The ACKs of a local peer arrive while the requester runs:
		 * take them in and send on, a few rounds, so that a
		 * doorbell between local QPs rarely needs the task.
		 */
		for (rounds = 0; rounds < VRDMA_DOORBELL_ROUNDS; rounds++) {
			again = vrdma_qp_run(qp);
			if (!again && skb_queue_empty(&qp->rx))
				break;
		}
		vrdma_qp_drained(qp);
	}
	vrdma_qp_unlock(qp);
	vrdma_qp_after_run(qp, again);
	return 0;
}

/**
 * vrdma_post_recv() - the receive doorbell, rung only in the error state
 * @ibqp: the QP
 * @wr: NULL: the WQEs are in the RQ ring already; for a kernel QP, the
 *	work requests to post (vrdma_kpost_recv())
 * @bad_wr: set to @wr on error
 *
 * Receive WQEs need no doorbell: the responder takes them when a message
 * arrives.  In the error state nothing arrives, so the provider rings this
 * to have them flushed.
 *
 * Return: 0, or -EINVAL for work requests passed the kernel way to a user
 * QP.
 */
int vrdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr)
{
	if (vrdma_queue_is_kernel(&to_vqp(ibqp)->sq))
		return vrdma_kpost_recv(to_vqp(ibqp), wr, bad_wr);
	if (wr) {
		*bad_wr = wr;
		return -EINVAL;
	}
	vrdma_qp_schedule(to_vqp(ibqp));
	return 0;
}

/**
 * vrdma_qp_init() - set up what all QPs share
 *
 * Return: 0 or -ENOMEM.
 */
int vrdma_qp_init(void)
{
	/*
	 * Unbound: a QP's task runs wherever a CPU is free.  Events at
	 * nice -20, the rest of a run at nice 0 (see the top of this file):
	 * all at nice -20 starved ksoftirqd for seconds on a slow kernel,
	 * where a task under loss never ran out of work, and every retry
	 * timed out (robustness.md).
	 */
	vrdma_wq = alloc_workqueue("vrdma", WQ_UNBOUND | WQ_HIGHPRI |
				   WQ_MEM_RECLAIM, 0);
	if (!vrdma_wq)
		return -ENOMEM;
	vrdma_wq_more = alloc_workqueue("vrdma_more", WQ_UNBOUND |
					WQ_MEM_RECLAIM, 0);
	if (!vrdma_wq_more) {
		destroy_workqueue(vrdma_wq);
		return -ENOMEM;
	}
	return 0;
}

void vrdma_qp_exit(void)
{
	destroy_workqueue(vrdma_wq_more);
	destroy_workqueue(vrdma_wq);
}
