// SPDX-License-Identifier: GPL-2.0
/*
 * The QP's scheduler: who runs a QP's engines, from where, and how work
 * passes between contexts.
 *
 * A QP's protocol work is done by three engines, the requester (SQ WQEs
 * become request packets), the responder (requests are placed and
 * answered) and the completer (answers complete SQ WQEs).  They share the
 * QP's transport state (qp->req, qp->resp, the SQ and RQ indices), so at
 * most one context runs them at a time: it "owns the engines", which is
 * bit VRDMA_QP_OWNED of qp->owner.  Every engine entry checks it
 * (vrdma_qp_assert_owned(), active with lockdep, as on the debug kernel).
 *
 * Entry points, the only places that take the engines:
 *
 *   the task       vrdma_qp_task(): a work item, process context.  Takes
 *                  qp->mutex and the bit (vrdma_qp_lock()) and runs
 *                  vrdma_qp_run(): the packets queued in qp->rx, the READ
 *                  responses owed, then the requester.  Queued by events
 *                  (vrdma_qp_schedule(): a packet, a kernel QP's post, a
 *                  timer, a hand-off from the tasklet) at high priority,
 *                  and by a run with work left (vrdma_qp_continue()) at
 *                  normal priority.
 *   the doorbell   vrdma_qp_doorbell(): a user QP's post_send, in the
 *                  process's own context.  Runs the QP as the task does if
 *                  nobody holds it (vrdma_qp_trylock()), else queues the
 *                  task.
 *   the inline run vrdma_qp_rcv_local(): a packet sent inside the driver
 *                  to a QP of this host.  Runs that QP at once in the
 *                  sender's context, if preemptible, one level deep per
 *                  CPU, and if nobody holds it (trylock); else the task.
 *   the tasklet    vrdma_qp_bh(): softirq.  Takes the bit alone, by
 *                  test-and-set, never the mutex.  Executes the RC
 *                  responses and READ requests at the head of qp->rx,
 *                  finishes a READ it started, and runs the requester
 *                  after answers (vrdma_requester_bh()).  Whatever else it
 *                  finds it leaves at the head of qp->rx for the task.
 *   the timers     vrdma_rnr_timer(), vrdma_retrans_timer(): softirq.  They
 *                  own nothing: they set a flag and queue the task.
 *
 * Verbs that read or change a QP's state (modify, query and destroy,
 * restrack, debugfs) take it as the task does, with vrdma_qp_lock().
 *
 * What each context may do while it owns the engines:
 *   - process context (task, doorbell, inline run, verbs): everything,
 *     including the loopback path to a peer QP (loopback.c), which takes
 *     the peer only by trylock, and the local operations (bind, register,
 *     invalidate), written for the mutex holder;
 *   - the tasklet: only what neither sleeps nor takes a mutex: completer
 *     runs, READ answers, and request packets of RC QPs in RTS.  It takes
 *     no receive WQE (READs consume none) and so no SRQ lock, and it
 *     leaves the loopback path and local operations to the task, which it
 *     queues (vrdma_send_wqes()).  Nothing at all of a QP whose PD has
 *     ODP MRs: their pages are faulted in where they are used, which
 *     sleeps (odp.c).
 *
 * Order: a QP's packets are executed in the order they arrived.  Only the
 * owner dequeues from qp->rx, and the tasklet puts back at the head what
 * it may not execute.  The responses of one READ leave from one CPU: the
 * context that started answering it finishes it (resp.read_bh for the
 * tasklet, which meanwhile reschedules itself on its own CPU), and the
 * requests behind it wait (vrdma_responder_waits()).  Whichever CPU a run
 * is on, the packets it sends leave after those of the runs before it:
 * while packets a run sent from one CPU are still in that CPU's queues,
 * a run on another holds its packets back (txq.c).
 *
 * Wakeups: a packet queued while the mutex holder is draining qp->rx is
 * taken in by that holder before it lets go (qp->draining and its
 * barriers: vrdma_qp_drain(), vrdma_qp_queue_rx()); otherwise its sender
 * queues the tasklet or the task.  A doorbell that finds the mutex held
 * by a holder that is draining leaves the requester to it the same way
 * (qp->kicked): between two QPs of this host the peer's process sees its
 * data while the sender still holds the peer, and posts at once.
 *
 * Lock order, outermost first:
 *   rtnl_lock (link add and delete, netdev events, multicast joins)
 *   vrdma_devices_lock, vrdma_nets_lock
 *   a multicast group table's mutex (mcast.c), an XRCD's mutex (xrc.c:
 *     an XRC SRQ being destroyed visits the target QPs), a device's flow
 *     mutex (raw.c: flows and the packet tap; taken under RTNL, never
 *     with a QP's mutex)
 *   qp->mutex, then VRDMA_QP_OWNED (vrdma_qp_lock())
 *   a WQ's mutex (wq.c: an RSS QP's task places frames in its table's
 *     WQs, which other QPs' tables may hold too; modify_wq alone)
 *   a peer QP's mutex and bit: only by trylock, so two QPs sending to
 *     each other never wait for each other
 *   a tag-matching SRQ's lock (tm.c; BH-safe: completers in the tasklet
 *     complete rendezvous), held while a match takes an SRQ's WQE and
 *     writes its completion, so it nests an SRQ's lock and a CQ's
 *   leaf locks, held briefly and never nested: a CQ's lock (irq-safe), an
 *   SRQ's lock (process context only), the MW table's xa_lock (BH-safe),
 *   a multicast group's list lock (BH-safe), the AH and QP tables'
 *   xa_locks and the XRC SRQ numbers' (irq-safe), a kernel QP's or SRQ's
 *   post locks (irq-safe), an ODP MR's page table (its xa_lock, BH-safe,
 *   around one page's access; also taken by the kernel's invalidations).
 *   A page fault (odp.c) is taken with none of the leaf locks held.
 *
 * Priorities: events queue the task on a WQ_HIGHPRI workqueue, so that an
 * answer leaves at once even where a process busy-polls the only CPU, as
 * a NIC's would.  A run that stops with work left (its budget used up)
 * continues at normal priority: a QP that always has more to do (a stream
 * under loss) then shares the CPU with ksoftirqd, which delivers the very
 * packets it waits for, instead of starving it.  The mutex keeps the two
 * work items from running the engines at once.
 */
#include "vrdma.h"
#include "trace.h"
#include "pkt.h"

static struct workqueue_struct *vrdma_wq;	/* events, WQ_HIGHPRI */
static struct workqueue_struct *vrdma_wq_more;	/* the rest of a run */

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
	 * XRC's go to the task too: a target QP takes its PD and SRQ from
	 * each request (xrc.c), which the task alone does.
	 */
	if (qp->destroyed || !vrdma_bh_pkt(skb) ||
	    qp->ibqp.qp_type != IB_QPT_RC)
		return false;
	/*
	 * ODP memory may have to be faulted in, which sleeps: a QP whose PD
	 * has ODP MRs is the task's (odp.c).
	 */
	if (vrdma_pd_has_odp(qp->pd))
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
 * Neither needs anything that sleeps (MR pages are pinned: QPs that may
 * reach ODP MRs are left to the task; the CQ and the window table take
 * BH-safe locks), and both are short.  Being a tasklet,
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
 * @skb: the checked packet (see struct vrdma_pkt), or a frame for a raw
 *	packet QP (raw.c: VRDMA_OPF_RAW, which the task hands to
 *	vrdma_raw_responder()); consumed
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

/*
 * One run of the QP's engines, mutex held: the packets that arrived, the
 * read responses owed, the requester.  Returns true if work is left that
 * needs another run (beyond packets still queued).
 */
static bool vrdma_qp_run(struct vrdma_qp *qp)
{
	struct sk_buff *skb;
	int budget = VRDMA_RUN_BUDGET;
	bool again;

	vrdma_qp_assert_locked(qp);
	/*
	 * A doorbell refused meanwhile: the requester below reads the SQ
	 * after the flag is cleared (vrdma_qp_kick()).
	 */
	if (smp_load_acquire(&qp->kicked)) {
		WRITE_ONCE(qp->kicked, false);
		smp_mb();	/* the flag cleared before the SQ is read */
	}
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
 * Up to @rounds runs while work or packets remain, the mutex held: packets
 * queued meanwhile are taken in by this holder (qp->draining) rather than
 * queueing the task.  Returns true if work is left that needs another run.
 */
static bool vrdma_qp_drain(struct vrdma_qp *qp, int rounds)
{
	bool again;

	WRITE_ONCE(qp->draining, true);
	do {
		again = vrdma_qp_run(qp);
		/*
		 * A run can be long: a window of packets, each delivered to a
		 * QP of this host that runs inline (vrdma_qp_rcv_local()).
		 * Between runs others may have the CPU, on a kernel that
		 * preempts only where asked to as well.
		 */
		cond_resched();
	} while (--rounds && (again || !skb_queue_empty(&qp->rx) ||
			      READ_ONCE(qp->kicked)));
	vrdma_qp_drained(qp);
	return again;
}

/*
 * Something the holder was to take in arrived after it looked: packets,
 * or a doorbell it refused.
 */
static bool vrdma_qp_left_work(struct vrdma_qp *qp)
{
	return (!skb_queue_empty(&qp->rx) && !READ_ONCE(qp->resp.read_bh)) ||
	       READ_ONCE(qp->kicked);
}

/*
 * After a run that let go of the mutex: the rest of its work continues at
 * normal priority; packets and doorbells that came in meanwhile have
 * queued the task themselves (this makes sure of it).
 */
static void vrdma_qp_after_run(struct vrdma_qp *qp, bool again)
{
	if (again)
		vrdma_qp_continue(qp);
	else if (vrdma_qp_left_work(qp))
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
	again = vrdma_qp_drain(qp, 1);
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

/*
 * Run @qp at once in this context if it may (vrdma_qp_rcv_local()): one
 * round, and one more for what came in meanwhile (packets, a doorbell of
 * its process, which sees the data placed by this run and posts at once);
 * else its task.
 */
static void vrdma_qp_run_inline(struct vrdma_qp *qp)
{
	bool ran = false, again = false;

	if (!preemptible()) {
		vrdma_qp_schedule(qp);
		return;
	}

	migrate_disable();
	if (!this_cpu_read(vrdma_inline_runs) && vrdma_qp_trylock(qp)) {
		this_cpu_inc(vrdma_inline_runs);
		if (!qp->destroyed)
			again = vrdma_qp_drain(qp, 2);
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
	if (READ_ONCE(qp->destroyed)) {
		kfree_skb(skb);
		return;
	}
	if (vrdma_qp_queue_rx(qp, skb))
		return;		/* the holder takes it in */
	vrdma_qp_run_inline(qp);
}

/**
 * vrdma_qp_hold_peer() - a peer QP taken by trylock (the loopback path)
 *	drains: what arrives for it meanwhile is left to its holder
 * @qp: the peer, its mutex and engines held
 */
void vrdma_qp_hold_peer(struct vrdma_qp *qp)
{
	WRITE_ONCE(qp->draining, true);
}

/**
 * vrdma_qp_release_peer() - let go of a peer taken by trylock, and run it
 *	if its process rang its doorbell or packets came meanwhile
 * @qp: the peer, held since vrdma_qp_hold_peer()
 *
 * Its process sees a message the loopback path placed before the sender
 * lets go of it, and may post at once: that doorbell is run here (an
 * inline run), not by a wakeup of the task.
 *
 * Context: process, the sender's engines owned.
 */
void vrdma_qp_release_peer(struct vrdma_qp *qp)
{
	vrdma_qp_drained(qp);
	vrdma_qp_unlock(qp);
	if (vrdma_qp_left_work(qp))
		vrdma_qp_run_inline(qp);
}

/*
 * A doorbell that found the mutex held: a holder that is draining runs
 * the requester once more before it lets go (vrdma_qp_drain(),
 * vrdma_qp_left_work()), else the task runs it.  The flag is set after the
 * WQEs were published, and read before draining: either the holder sees
 * the flag, or this sees that it stopped draining.
 */
static void vrdma_qp_kick(struct vrdma_qp *qp)
{
	/* After the WQEs: pairs with the acquire in vrdma_qp_run(). */
	smp_store_release(&qp->kicked, true);
	smp_mb();	/* pairs with vrdma_qp_drained() */
	if (!READ_ONCE(qp->draining))
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

/**
 * vrdma_qp_doorbell() - run a user QP on its SQ doorbell
 * @qp: the QP
 *
 * When nobody holds the QP, the caller runs it itself (the requester, and
 * the ACKs that came back meanwhile): the first packets leave before
 * post_send returns, as from a NIC, and a UD or UC WQE is complete by
 * then, as is an RC WQE to a local peer (vrdma_qp_rcv_local()).  The ACKs
 * of a local peer arrive while the requester runs: a few rounds take them
 * in and send on, so that a doorbell between local QPs rarely needs the
 * task.  Otherwise the task is queued (again), so that it looks at the SQ
 * once more before it ends.
 *
 * Context: process; does not sleep on the QP (trylock).
 */
void vrdma_qp_doorbell(struct vrdma_qp *qp)
{
	bool again = false;

	if (!vrdma_qp_trylock(qp)) {
		vrdma_qp_kick(qp);
		return;
	}
	if (!qp->destroyed)
		again = vrdma_qp_drain(qp, VRDMA_DOORBELL_ROUNDS);
	vrdma_qp_unlock(qp);
	vrdma_qp_after_run(qp, again);
}

/**
 * vrdma_sched_qp_init() - set up a new QP's task, tasklet and timers
 * @qp: the QP being created
 */
void vrdma_sched_qp_init(struct vrdma_qp *qp)
{
	mutex_init(&qp->mutex);
	skb_queue_head_init(&qp->rx);
	INIT_WORK(&qp->task, vrdma_qp_task);
	INIT_WORK(&qp->task_more, vrdma_qp_task_more);
	tasklet_setup(&qp->bh, vrdma_qp_bh);
	timer_setup(&qp->rnr_timer, vrdma_rnr_timer, 0);
	timer_setup(&qp->retrans_timer, vrdma_retrans_timer, 0);
}

/**
 * vrdma_sched_qp_stop() - wait until nothing of a destroyed QP can run
 * @qp: the QP, marked destroyed, out of the QP table, its last lookup
 *	reference dropped
 *
 * Context: process; sleeps.
 */
void vrdma_sched_qp_stop(struct vrdma_qp *qp)
{
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
}

/**
 * vrdma_sched_init() - set up what all QPs share
 *
 * Return: 0 or -ENOMEM.
 */
int vrdma_sched_init(void)
{
	/*
	 * Unbound: a QP's task runs wherever a CPU is free.  Events at
	 * nice -20, the rest of a run at nice 0 (see the top of this file).
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

/**
 * vrdma_queue_background() - run @work in process context, at normal
 *	priority, before the module goes away
 * @work: the work item
 */
void vrdma_queue_background(struct work_struct *work)
{
	queue_work(vrdma_wq_more, work);
}

void vrdma_sched_exit(void)
{
	destroy_workqueue(vrdma_wq_more);
	destroy_workqueue(vrdma_wq);
}
