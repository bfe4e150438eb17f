// SPDX-License-Identifier: GPL-2.0
/*
 * The QP's transmit queue: a QP's packets leave in the order its engines
 * made them, whichever CPU each run was on.
 *
 * One context at a time runs a QP's engines (sched.c), but not always on
 * one CPU: the doorbell runs on the poster's, the tasklet where the answers
 * came in, the task wherever the workqueue puts it.  Below IP the stack is
 * not ordered across CPUs: a veth (and a bridge, VLAN or macvlan on one)
 * hands each packet to a receive queue of the CPU that sent it, a NIC with
 * a transmit queue per CPU to that CPU's queue, and those queues empty in
 * no order between them.  Two runs on two CPUs would then overtake each
 * other, and the peer would see a PSN gap: a NAK and a resend for nothing,
 * or for UC a message lost.
 *
 * So a QP sends from one CPU at a time.  A packet given to IP is in flight
 * until the stack lets go of it (its destructor: a veth's receiver takes
 * it off that CPU's queue, a NIC completes it, or it is dropped).  That is
 * confirmed by a tasklet on the CPU where it happened, which runs after
 * the receive softirq has put the packet where its order is fixed (a QP's
 * queue, a socket).  While a QP has packets in flight from one CPU, a run
 * on another holds its packets back, in order, and the tasklet that
 * confirms the last of them sends them on.  Held packets are counted
 * (tx_held).
 *
 * A device with a single transmit queue and a qdisc (a NIC's, or a
 * single-queue virtio-net's) keeps the order it is given by itself: what
 * goes out through one is not tracked, though it still waits behind held
 * packets.  Packets to a device of this host (vrdma_deliver_local()) do
 * not pass here: they reach their QP's queue at once.
 *
 * Lifetime: a packet in flight holds a reference to the vrdma_txq, which
 * outlives its QP for as long as the stack keeps such a packet; module exit
 * waits for the last one (vrdma_txq_exit()).
 */
#include "vrdma.h"
#include "pkt.h"

/**
 * struct vrdma_txq - the order of one QP's packets
 * @lock: protects @held, @inflight, @cpu and @dead (BH-safe)
 * @held: packets waiting for @inflight to reach 0
 * @inflight: packets sent from @cpu whose release is not yet confirmed
 * @cpu: the CPU the packets in flight were sent from
 * @dead: the QP is gone; nothing more is sent
 * @gone: packets released by the stack, not yet confirmed by @bh
 * @kicked: bit 0: @bh is scheduled and holds a reference for it
 * @refs: one for the QP, one per packet in flight, one for a kicked @bh
 * @bh: confirms releases and sends @held (vrdma_txq_bh())
 * @vdev: the QP's device: counters and the namespace, while !@dead
 * @rcu: frees the structure after the last tasklet run has let go of it
 */
struct vrdma_txq {
	spinlock_t lock;	/* @held, @inflight, @cpu, @dead */
	struct sk_buff_head held;
	unsigned int inflight;
	int cpu;
	bool dead;
	atomic_t gone;
	unsigned long kicked;
	refcount_t refs;
	struct tasklet_struct bh;
	struct vrdma_dev *vdev;
	struct rcu_head rcu;
};

/* Queues not yet freed: module exit waits for them (vrdma_txq_exit()). */
static atomic_t vrdma_txqs = ATOMIC_INIT(0);

static void vrdma_txq_free(struct rcu_head *rcu)
{
	kfree(container_of(rcu, struct vrdma_txq, rcu));
	if (atomic_dec_and_test(&vrdma_txqs))
		wake_up_var(&vrdma_txqs);
}

static void vrdma_txq_put(struct vrdma_txq *q)
{
	/*
	 * The last reference may be dropped by the tasklet itself, which
	 * touches its tasklet_struct after returning: free after a grace
	 * period, which cannot end while that softirq runs.
	 */
	if (refcount_dec_and_test(&q->refs))
		call_rcu(&q->rcu, vrdma_txq_free);
}

/*
 * The skb destructor of a packet in flight: the stack has let go of it.
 * Any context but hard interrupts; takes no lock.
 */
static void vrdma_txq_skb_gone(struct sk_buff *skb)
{
	struct vrdma_txq *q = skb_shinfo(skb)->destructor_arg;

	atomic_inc(&q->gone);
	/* Fully ordered: the tasklet that clears the bit sees @gone. */
	if (!test_and_set_bit(0, &q->kicked)) {
		refcount_inc(&q->refs);
		tasklet_schedule(&q->bh);
	}
	vrdma_txq_put(q);
}

/*
 * Only a device with its own queues can reorder: a single transmit queue
 * behind a qdisc (IFF_NO_QUEUE marks the virtual devices that have none of
 * their own) sends in the order it was given.
 */
static bool vrdma_txq_ordered_dev(const struct net_device *dev)
{
	return dev->real_num_tx_queues == 1 &&
	       !(dev->priv_flags & IFF_NO_QUEUE);
}

/* Count @skb in flight from @cpu, unless its device keeps the order. */
static void vrdma_txq_track(struct vrdma_txq *q, struct sk_buff *skb,
			    int cpu)
{
	lockdep_assert_held(&q->lock);
	if (vrdma_txq_ordered_dev(skb_dst(skb)->dev))
		return;
	/* A retransmission's clone owns its header (skb_cow_head()). */
	skb_shinfo(skb)->destructor_arg = q;
	skb->destructor = vrdma_txq_skb_gone;
	refcount_inc(&q->refs);
	q->inflight++;
	q->cpu = cpu;
}

/*
 * Confirm the releases, and once nothing is in flight send what was held,
 * from this CPU: runs where the stack let go of the packets, after the
 * softirq that did so.
 */
static void vrdma_txq_bh(struct tasklet_struct *t)
{
	struct vrdma_txq *q = from_tasklet(q, t, bh);
	int cpu = smp_processor_id();
	struct sk_buff_head list;
	struct sk_buff *skb;

	clear_bit(0, &q->kicked);
	smp_mb__after_atomic();	/* pairs with vrdma_txq_skb_gone() */
	__skb_queue_head_init(&list);
	spin_lock(&q->lock);
	q->inflight -= atomic_xchg(&q->gone, 0);
	if (!q->inflight && !q->dead) {
		skb_queue_splice_init(&q->held, &list);
		skb_queue_walk(&list, skb)
			vrdma_txq_track(q, skb, cpu);
	}
	spin_unlock(&q->lock);
	/* Not dead: the QP's destroy waits for this run (vrdma_txq_destroy()). */
	while ((skb = __skb_dequeue(&list)))
		vrdma_ip_send(q->vdev, skb);
	vrdma_txq_put(q);
}

/**
 * vrdma_txq_xmit() - send a QP's packet in order
 * @q: the QP's transmit queue
 * @skb: routed (skb_dst() set), its IP header and ICRC in place
 *
 * Sends @skb at once, or holds it back while packets of the QP sent from
 * another CPU are in flight (see the top of this file).
 *
 * Context: process or softirq; the caller owns the QP's engines.
 * Return: 0 if sent or held, else the errno of vrdma_ip_send().  Consumes
 * @skb.
 */
int vrdma_txq_xmit(struct vrdma_txq *q, struct sk_buff *skb)
{
	bool hold;
	int err = 0;
	int cpu;

	/* BHs off: this CPU is the one the packet is sent from. */
	local_bh_disable();
	spin_lock(&q->lock);
	cpu = smp_processor_id();
	hold = !skb_queue_empty(&q->held) || (q->inflight && q->cpu != cpu);
	if (!hold)
		vrdma_txq_track(q, skb, cpu);
	else if (skb_queue_len(&q->held) < VRDMA_TXQ_HELD_MAX)
		__skb_queue_tail(&q->held, skb);
	else
		err = -ENOBUFS;
	spin_unlock(&q->lock);
	if (!hold) {
		err = vrdma_ip_send(q->vdev, skb);
	} else if (err) {
		kfree_skb(skb);
		vrdma_count(q->vdev, VRDMA_CNT_TX_ERR);
	} else {
		vrdma_count(q->vdev, VRDMA_CNT_TX_HELD);
	}
	local_bh_enable();
	return err;
}

/**
 * vrdma_txq_create() - a transmit queue for a new RC or UC QP
 * @vdev: the QP's device
 *
 * Context: process.
 * Return: the queue, or NULL without memory.
 */
struct vrdma_txq *vrdma_txq_create(struct vrdma_dev *vdev)
{
	struct vrdma_txq *q = kzalloc(sizeof(*q), GFP_KERNEL_ACCOUNT);

	if (!q)
		return NULL;
	spin_lock_init(&q->lock);
	__skb_queue_head_init(&q->held);
	refcount_set(&q->refs, 1);
	tasklet_setup(&q->bh, vrdma_txq_bh);
	q->vdev = vdev;
	atomic_inc(&vrdma_txqs);
	return q;
}

/**
 * vrdma_txq_destroy() - drop a destroyed QP's transmit queue
 * @q: the queue, or NULL
 *
 * Packets still held are dropped; packets in flight keep the structure
 * until the stack lets go of them, but nothing more is sent.
 *
 * Context: process; the QP's engines no longer run (vrdma_sched_qp_stop()).
 */
void vrdma_txq_destroy(struct vrdma_txq *q)
{
	struct sk_buff_head list;

	if (!q)
		return;
	__skb_queue_head_init(&list);
	spin_lock_bh(&q->lock);
	q->dead = true;
	skb_queue_splice_init(&q->held, &list);
	spin_unlock_bh(&q->lock);
	__skb_queue_purge(&list);
	/* A run that took held packets before @dead sends them first. */
	tasklet_unlock_wait(&q->bh);
	vrdma_txq_put(q);
}

/**
 * vrdma_txq_exit() - wait until no packet of a QP is left in the stack
 *
 * Their destructors are this module's code.  A qdisc that keeps packets
 * (netem's delay) makes this wait as long.
 *
 * Context: process (module exit), after every device is gone.
 */
void vrdma_txq_exit(void)
{
	wait_var_event(&vrdma_txqs, !atomic_read(&vrdma_txqs));
	rcu_barrier();	/* vrdma_txq_free() has returned */
}
