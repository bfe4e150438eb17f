// SPDX-License-Identifier: GPL-2.0
/*
 * UD: unreliable datagrams.
 *
 * A UD QP is not connected: each send WQE names its destination, an
 * address handle (ah.c), a QP number and a Q_Key, and becomes exactly one
 * packet, SEND ONLY (with immediate), with a DETH after the BTH that
 * carries the Q_Key and the sending QP's number.  A message must fit in
 * one packet: at most the port's active MTU.  Nothing is acknowledged or
 * resent; a WQE is complete once its packet is sent.
 *
 * The receiver accepts a packet only with its QP's Q_Key, and places it
 * into the next receive WQE behind 40 bytes of GRH, which for RoCEv2 is
 * the packet's IP header: an IPv6 header fills them, an IPv4 header takes
 * the last 20 (ib_core's union rdma_network_hdr, as mlx5 and rxe do), so
 * that ibv_init_ah_from_wc() can answer the sender.  The completion says
 * IBV_WC_GRH, the sending QP (src_qp) and a byte_len that counts the 40
 * bytes.  A packet with the wrong Q_Key, or for which no receive WQE is
 * posted, is dropped and counted.
 *
 * An AH whose destination GID is a multicast address sends to a multicast
 * group: the packet's destination is that IP multicast address (and its
 * multicast MAC, by the neighbour table), and its destination QPN the
 * multicast QPN, whatever the WQE says.  Receiving one is mcast.c's.
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <rdma/ib_addr.h>

#include "vrdma.h"
#include "pkt.h"

/**
 * vrdma_ud_send_packet() - send the packet of a UD send WQE
 * @qp: the QP, engines owned, mutex held
 * @swqe: the WQE at qp->req.cur, checked
 *
 * A WQE that cannot be sent -- its AH is not one of the QP's PD, it is
 * longer than the port MTU, an MR went away -- gets its status set and is
 * completed by the caller.
 *
 * Return: 0, or -ENOMEM when no packet could be allocated (retried later).
 */
int vrdma_ud_send_packet(struct vrdma_qp *qp, struct vrdma_swqe *swqe)
{
	struct vrdma_send_wqe *wqe = swqe->wqe;
	u32 qkey = wqe->ud.remote_qkey;
	u32 dqpn = wqe->ud.remote_qpn;
	u32 psn = qp->req.psn;
	struct vrdma_deth *deth;
	struct sk_buff *skb;
	struct vrdma_ah_dest *ah;
	u8 opcode;

	vrdma_qp_assert_locked(qp);

	ah = vrdma_ah_get(qp->vdev, wqe->ud.ah, qp->pd);
	if (!ah) {
		vrdma_count(qp->vdev, VRDMA_CNT_BAD_WQE);
		swqe->status = IB_WC_LOC_QP_OP_ERR;
		return 0;
	}
	/*
	 * IBA C10-93.1.1 lets a CI drop a UD message longer than the MTU
	 * without a word (rxe does); a length error tells the sender why
	 * nothing arrives, as RoCE NICs do.
	 */
	if (swqe->length > vrdma_port_mtu(qp->vdev)) {
		swqe->status = IB_WC_LOC_LEN_ERR;
		goto out;
	}

	opcode = wqe->opcode == IB_UVERBS_WR_SEND_WITH_IMM ?
		 IB_OPCODE_UD_SEND_ONLY_WITH_IMMEDIATE : IB_OPCODE_UD_SEND_ONLY;
	skb = vrdma_pkt_alloc(qp->vdev, &ah->av, opcode, swqe->length);
	if (!skb) {
		vrdma_ah_put(ah);
		return -ENOMEM;
	}
	deth = vrdma_ext(skb, VRDMA_OPF_DETH);
	if (qkey & VRDMA_QKEY_USE_QP)
		qkey = qp->attr.qkey;
	deth->qkey = cpu_to_be32(qkey);
	deth->sqp = cpu_to_be32(qp->ibqp.qp_num & VRDMA_BTH_QPN_MASK);
	if (vrdma_pkt(skb)->mask & VRDMA_OPF_IMMDT) {
		struct vrdma_immdt *immdt = vrdma_ext(skb, VRDMA_OPF_IMMDT);

		immdt->imm = wqe->ex.imm_data;
	}
	if (swqe->length && vrdma_swqe_gather(qp, wqe, 0, vrdma_payload(skb),
					      swqe->length)) {
		kfree_skb(skb);
		swqe->status = IB_WC_LOC_PROT_ERR;
		goto out;
	}
	if (rdma_is_multicast_addr((struct in6_addr *)ah->av.dgid.raw)) {
		dqpn = VRDMA_MCAST_QPN;
		vrdma_count(qp->vdev, VRDMA_CNT_MCAST_SENT);
	}
	vrdma_bth_init(skb, dqpn, psn, wqe->flags & VRDMA_SEND_SOLICITED,
		       false);

	vrdma_req_datagram_sent(qp, swqe, psn);
	/* A lost datagram is the receiver's problem; errors are counted. */
	vrdma_pkt_send(qp->vdev, &ah->av, NULL, skb);
out:
	vrdma_ah_put(ah);
	return 0;
}

/*
 * The 40 bytes in front of the data: the packet's IP header, as received.
 * Returns the enum vrdma_network_hdr_type of what was put there.
 */
static u8 vrdma_ud_grh(struct sk_buff *skb, u8 *grh)
{
	if (ip_hdr(skb)->version == 4) {
		/* Options, if any, are not part of a GRH. */
		memset(grh, 0, VRDMA_GRH_SIZE - sizeof(struct iphdr));
		memcpy(grh + VRDMA_GRH_SIZE - sizeof(struct iphdr), ip_hdr(skb),
		       sizeof(struct iphdr));
		return VRDMA_NETWORK_HDR_IPV4;
	}
	memcpy(grh, ipv6_hdr(skb), sizeof(struct ipv6hdr));
	return VRDMA_NETWORK_HDR_IPV6;
}

/* Complete the receive WQE in use; an error puts the QP in error. */
static void vrdma_ud_complete(struct vrdma_qp *qp, struct sk_buff *skb,
			      struct vrdma_cqe *cqe)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);

	cqe->wr_id = qp->rwqe.wqe->wr_id;
	cqe->opcode = IB_WC_RECV;
	cqe->qp_num = qp->ibqp.qp_num;
	qp->rwqe.valid = false;
	if (vrdma_cq_post(qp->rcq, cqe, pkt->se))
		vrdma_qp_error(qp, IB_EVENT_QP_FATAL);
	else if (cqe->status != IB_WC_SUCCESS)
		vrdma_qp_error(qp, 0);
}

/**
 * vrdma_ud_responder() - receive one UD packet
 * @qp: the QP, engines owned, mutex held
 * @skb: a request packet for @qp (consumed)
 *
 * A receive buffer too small for the GRH and the data, or not writable,
 * is a local error: the WQE completes with it and the QP goes to error.
 */
void vrdma_ud_responder(struct vrdma_qp *qp, struct sk_buff *skb)
{
	struct vrdma_pkt *pkt = vrdma_pkt(skb);
	struct vrdma_rwqe *rw = &qp->rwqe;
	struct vrdma_cqe cqe = {};
	struct vrdma_deth *deth;
	u8 grh[VRDMA_GRH_SIZE];
	int ret;

	vrdma_qp_assert_locked(qp);

	if (!vrdma_qp_receives(qp))
		goto out;
	if (!(pkt->mask & VRDMA_OPF_UD) ||
	    pkt->paylen > vrdma_port_mtu(qp->vdev)) {
		vrdma_count(qp->vdev, VRDMA_CNT_MALFORMED);
		goto out;
	}
	deth = vrdma_ext(skb, VRDMA_OPF_DETH);
	if (be32_to_cpu(deth->qkey) != qp->attr.qkey) {
		vrdma_count(qp->vdev, VRDMA_CNT_QKEY_ERR);
		goto out;
	}
	if (!rw->valid && !vrdma_take_rwqe(qp)) {
		if (qp->state != IB_QPS_ERR)
			vrdma_count(qp->vdev, VRDMA_CNT_NO_RECV_WQE);
		goto out;
	}

	if (VRDMA_GRH_SIZE + pkt->paylen > rw->length) {
		cqe.status = IB_WC_LOC_LEN_ERR;
		vrdma_ud_complete(qp, skb, &cqe);
		goto out;
	}
	cqe.network_hdr_type = vrdma_ud_grh(skb, grh);
	/* The WQE's PD: the SRQ's when the QP receives through one. */
	ret = vrdma_sgl_copy(qp->vdev, rw->pd, rw->wqe->sge,
			     rw->wqe->num_sge, 0, grh, VRDMA_GRH_SIZE, true);
	if (!ret && pkt->paylen)
		ret = vrdma_sgl_copy_from_skb(qp->vdev, rw->pd, rw->wqe->sge,
					      rw->wqe->num_sge, VRDMA_GRH_SIZE,
					      skb, pkt->hdr_len, pkt->paylen);
	if (ret) {
		cqe.status = IB_WC_LOC_PROT_ERR;
		vrdma_ud_complete(qp, skb, &cqe);
		goto out;
	}

	cqe.status = IB_WC_SUCCESS;
	cqe.byte_len = VRDMA_GRH_SIZE + pkt->paylen;
	cqe.src_qp = be32_to_cpu(deth->sqp) & VRDMA_BTH_QPN_MASK;
	cqe.wc_flags = VRDMA_WC_GRH;
	if (pkt->mask & VRDMA_OPF_IMMDT) {
		struct vrdma_immdt *immdt = vrdma_ext(skb, VRDMA_OPF_IMMDT);

		cqe.ex.imm_data = immdt->imm;
		cqe.wc_flags |= VRDMA_WC_WITH_IMM;
	}
	vrdma_ud_complete(qp, skb, &cqe);
out:
	consume_skb(skb);
}
