#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""The checks of res_stats.sh, with pyverbs.

Usage: res_stats.py DEV0 NETDEV0 DEV1 IP1 IP0

DEV0 (on NETDEV0, whose address is IP0) and DEV1 (whose address is IP1,
in another network namespace) are connected by a veth pair.  RC QPs are
connected between them and on DEV0 alone, known traffic is run, and after
each step the driver details of "rdma res show qp|cq|mr -dd" and the
counters of "rdma statistic show link" are compared with what the traffic
must have done; MR addresses are checked as seen by root and by uid
65534, and a flood of UD packets is sent to a QP whose task cannot run
(check_rx_bound()).  Prints "R <0|1> <description>" per check (0 = pass) and "# ..." for
information; res_stats.sh turns them into TAP.
"""
import json
import os
import select
import socket
import struct
import subprocess
import sys
import time

import pyverbs.enums as e
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR

# The ICRC code of wire/icrc_kat.py, which is checked against rdma_rxe.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "wire"))
from icrc_kat import with_icrc  # noqa: E402

DEV0, NDEV0, DEV1, IP1, IP0 = sys.argv[1:6]
SLOW = max(1, int(os.environ.get('VRDMA_TEST_SLOW', '1')))
MSG = 4096             # four packets at path MTU 1024
PAGES = 8              # MR size in pages
PKT_BYTES = 20 + 8 + 12 + 1024 + 4  # IPv4 + UDP + BTH + payload + ICRC


def result(ok, desc, info=None):
    print(f'R {0 if ok else 1} {desc}')
    if not ok and info is not None:
        print(f'# {info}')
    sys.stdout.flush()


def rdma_json(*args, user=None):
    """rdma -j -dd ARGS, as root or, with @user, as that uid (setpriv)."""
    pre = [] if user is None else ['setpriv', f'--reuid={user}',
                                   f'--regid={user}', '--clear-groups']
    out = subprocess.run(pre + ['rdma', '-j', '-dd'] + list(args),
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out) if out.strip() else []


def rdma_text(*args, user=None):
    """rdma -dd ARGS as plain text, as root or as uid @user."""
    pre = [] if user is None else ['setpriv', f'--reuid={user}',
                                   f'--regid={user}', '--clear-groups']
    return subprocess.run(pre + ['rdma', '-dd'] + list(args),
                          capture_output=True, text=True, check=True).stdout


LOCAL_DIRECT = '/sys/module/vrdma/parameters/local_direct'


def local_direct(value):
    """Turn vrdma's packet-less loopback path on ('1') or off ('0')."""
    if os.path.exists(LOCAL_DIRECT):
        with open(LOCAL_DIRECT, 'w') as f:
            f.write(value)


def counters(dev):
    stats = rdma_json('statistic', 'show', 'link', f'{dev}/1')
    return {k: v for k, v in stats[0].items() if isinstance(v, int)}


def res(kind, dev):
    # This process's objects only: ib_core's own (QP1's CQ...) are not.
    return [r for r in rdma_json('res', 'show', kind)
            if r.get('ifname') == dev and r.get('pid') == os.getpid()]


def mrs_of(pid, dev, user=None):
    """The driver view of @pid's MRs on @dev, as seen by root or @user."""
    return [drv(r) for r in rdma_json('res', 'show', 'mr', user=user)
            if r.get('ifname') == dev and r.get('pid') == pid]


def text_lines(pid, dev, user=None):
    """The lines of "rdma -dd res show mr" for @pid's MRs on @dev."""
    return [ln for ln in rdma_text('res', 'show', 'mr', user=user).splitlines()
            if f'dev {dev} ' in ln and f' pid {pid} ' in ln + ' ']


NOBODY = 65534


def iova(entry):
    """An entry's iova (a number in JSON), or None if not shown."""
    v = entry.get('iova')
    return int(v, 16) if isinstance(v, str) else v


def check_addresses(side):
    """MR addresses: only to root (CAP_NET_ADMIN) and to the owner.

    The MR of this process (root) as uid 65534 shows no iova, as root it
    shows its address; a process of uid 65534 sees the iova of its own MR
    and not root's.
    """
    me, addr = os.getpid(), side.mr.buf
    mine = mrs_of(me, DEV0)
    result(len(mine) == 1 and iova(mine[0]) == addr,
           f'{DEV0}: res mr -dd as root: the iova of root\'s MR', mine)
    seen = mrs_of(me, DEV0, user=NOBODY)
    lines = text_lines(me, DEV0, user=NOBODY)
    result(len(seen) == 1 and 'iova' not in seen[0] and
           seen[0].get('length') == PAGES * 4096,
           f'{DEV0}: res mr -dd -j as uid {NOBODY}: root\'s MR listed, '
           'no iova', seen)
    result(len(lines) == 1 and 'iova' not in lines[0] and
           f'{addr:x}' not in lines[0],
           f'{DEV0}: res mr -dd as uid {NOBODY}: root\'s MR listed, no iova',
           lines)
    sys.stdout.flush()
    child = os.fork()
    if child == 0:
        # The PD is the parent's too: only what the child made is undone,
        # and _exit() skips every other object's destructor.
        code = 1
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            own = MR(side.pd, 4096, e.IBV_ACCESS_LOCAL_WRITE)
            theirs = mrs_of(os.getpid(), DEV0)
            root = mrs_of(me, DEV0)
            result(len(theirs) == 1 and iova(theirs[0]) == own.buf,
                   f'{DEV0}: res mr -dd as uid {NOBODY}: its own MR\'s iova',
                   theirs)
            result(len(root) == 1 and 'iova' not in root[0],
                   f'{DEV0}: ... and not that of root\'s MR', root)
            own.close()
            code = 0
        except Exception as ex:  # pylint: disable=broad-except
            print(f'# the uid {NOBODY} child: {ex!r}')
        sys.stdout.flush()
        os._exit(code)
    _, status = os.waitpid(child, 0)
    result(status == 0, f'the uid {NOBODY} child ran to its end', status)


RX_QUEUE_MAX = 4096     # VRDMA_RX_QUEUE_MAX
WQ_CPUMASK = '/sys/devices/virtual/workqueue/cpumask'
RT_RUNTIME = '/proc/sys/kernel/sched_rt_runtime_us'
# From Linux 6.12 a deadline server gives CFS tasks 50 ms a second on a
# CPU whatever RT tasks run there: the QP's task would run on CPU 1 in
# those slices, and the slower the flood, the more of it.
FAIR_SERVER = '/sys/kernel/debug/sched/fair_server/cpu1/runtime'


def read_file(path):
    with open(path) as f:
        return f.read().strip()


def write_file(path, value):
    with open(path, 'w') as f:
        f.write(value)


def ud_send_packet(saddr, daddr, qpn, qkey, payload=b''):
    """A UD SEND ONLY from QP 1 of @saddr to @qpn at @daddr: IPv4 (its
    checksum the kernel's), UDP, BTH, DETH, @payload, ICRC."""
    pad = -len(payload) & 3
    bth = struct.pack('>BBHII', 0x64, pad << 4, 0xffff, qpn, 0)
    deth = struct.pack('>II', qkey, 1)
    body = bth + deth + payload + b'\0' * pad
    n = 20 + 8 + len(body) + 4
    ip = struct.pack('>BBHHHBBH4s4s', 0x45, 0, n, 0x1234, 0x4000, 64, 17, 0,
                     socket.inet_aton(saddr), socket.inet_aton(daddr))
    udp = struct.pack('>HHHH', 0xc017, 4791, n - 20, 0)
    return with_icrc(ip + udp + body)


def hog_cpu(cpu, ready, stop, seconds):
    """In a child: spin at SCHED_FIFO on @cpu until @stop is readable."""
    os.sched_setaffinity(0, {cpu})
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(50))
    os.write(ready, b'r')
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if select.select([stop], [], [], 0)[0]:
            break
    os._exit(0)


def check_rx_bound(side):
    """A flood to a QP whose task cannot run: at most RX_QUEUE_MAX wait.

    The QP's task (an unbound workqueue's) is kept off the CPUs: unbound
    work may run on CPU 1 only, where a SCHED_FIFO process spins (without
    RT throttling; from 6.12 with CPU 1's fair server off too), while
    this process sends from CPU 0, where the softirq receives.  A UD QP
    without receive WQEs takes each packet it executes as no_recv_wqe;
    beyond the bound it must drop and count rx_queue_full.  Then the QP
    must work as before.
    """
    if os.cpu_count() < 2 or not os.path.exists(WQ_CPUMASK):
        print(f'# rx bound: needs 2 CPUs and {WQ_CPUMASK}: not run')
        return
    old_fair = read_file(FAIR_SERVER) if os.path.exists(FAIR_SERVER) else None
    release = tuple(int(x) for x in os.uname().release.split('.')[:2])
    if release >= (6, 12) and old_fair is None:
        # No RT hog keeps CFS work off a CPU there: not a test of the bound.
        print(f'# rx bound: needs {FAIR_SERVER} (CONFIG_SCHED_DEBUG) '
              'to keep the QP\'s task off CPU 1: not run')
        return
    flood = RX_QUEUE_MAX + 2000
    qkey = 0x11111111
    cap = QPCap(max_send_wr=1, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    cq = CQ(side.ctx, 8)
    qp = QP(side.pd, QPInitAttr(qp_type=e.IBV_QPT_UD, scq=cq, rcq=cq,
                                cap=cap))
    attr = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
    attr.qkey = qkey
    attr.pkey_index = 0
    qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_PKEY_INDEX | e.IBV_QP_PORT |
              e.IBV_QP_QKEY)
    qp.modify(QPAttr(qp_state=e.IBV_QPS_RTR), e.IBV_QP_STATE)
    attr = QPAttr(qp_state=e.IBV_QPS_RTS)
    attr.sq_psn = 0
    qp.modify(attr, e.IBV_QP_STATE | e.IBV_QP_SQ_PSN)
    pkt = ud_send_packet(IP0, IP1, qp.qp_num, qkey)
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    old_mask, old_rt = read_file(WQ_CPUMASK), read_file(RT_RUNTIME)
    old_aff = os.sched_getaffinity(0)
    ready_r, ready_w = os.pipe()
    stop_r, stop_w = os.pipe()
    hog = None
    c1 = counters(DEV1)
    try:
        write_file(WQ_CPUMASK, '2')
        write_file(RT_RUNTIME, '-1')
        if old_fair is not None:
            write_file(FAIR_SERVER, '0')
        os.sched_setaffinity(0, {0})
        sys.stdout.flush()
        hog = os.fork()
        if hog == 0:
            hog_cpu(1, ready_w, stop_r, 60 * SLOW)
        os.read(ready_r, 1)
        for _ in range(flood):
            sock.sendto(pkt, (IP1, 0))
        mid = counters(DEV1)
    finally:
        if hog:
            os.write(stop_w, b's')
            os.waitpid(hog, 0)
        if old_fair is not None:
            write_file(FAIR_SERVER, old_fair)
        write_file(RT_RUNTIME, old_rt)
        write_file(WQ_CPUMASK, old_mask)
        os.sched_setaffinity(0, old_aff)
    deadline = time.time() + 30 * SLOW
    while time.time() < deadline:
        d1 = counters(DEV1)
        if (delta(d1, c1, 'no_recv_wqe') + delta(d1, c1, 'rx_queue_full') >=
                flood):
            break
        time.sleep(0.1)
    full = delta(d1, c1, 'rx_queue_full')
    ran = delta(mid, c1, 'no_recv_wqe')
    queued = delta(d1, mid, 'no_recv_wqe')
    print(f'# rx bound: {flood} sent, {delta(d1, c1, "rcvd_pkts")} received, '
          f'{ran} executed while starved, {queued} queued then, '
          f'{full} dropped: rx_queue_full')
    result(full >= 1 and full >= flood - RX_QUEUE_MAX - ran - 2,
           f'rx bound: a flood of {flood} UD packets to a starved QP: '
           f'all beyond {RX_QUEUE_MAX} dropped, counted rx_queue_full',
           f'{d1} {c1}')
    result(queued <= RX_QUEUE_MAX + 2,
           f'rx bound: at most {RX_QUEUE_MAX} (and one per CPU) queued',
           queued)
    result(delta(d1, c1, 'rcvd_pkts') == flood and
           full + delta(d1, c1, 'no_recv_wqe') == flood and
           delta(d1, c1, 'rcvd_dropped') >= flood,
           'rx bound: every packet counted once, in rcvd_dropped too',
           f'{d1} {c1}')
    qp.post_recv(RecvWR(sg=[SGE(side.mr.buf, MSG, side.mr.lkey)], num_sge=1))
    sock.sendto(ud_send_packet(IP0, IP1, qp.qp_num, qkey, b'after'),
                (IP1, 0))
    deadline = time.time() + 10 * SLOW
    got = 0
    while not got and time.time() < deadline:
        got, wcs = cq.poll(1)
        if not got:
            time.sleep(0.01)
    result(got == 1 and wcs[0].status == e.IBV_WC_SUCCESS and
           wcs[0].byte_len == 40 + 5,
           'rx bound: the QP receives again once it runs',
           wcs[0].status if got else 'no completion')
    sock.close()
    qp.close()
    cq.close()


def drv(entry):
    """The driver attributes of one "rdma -j -dd res show" entry."""
    d = {}
    for k, v in entry.items():
        if isinstance(v, (int, str)):
            d[k[4:] if k.startswith('drv_') else k] = v
    return d


def qp_entry(dev, qpn):
    for r in res('qp', dev):
        if r.get('lqpn') == qpn:
            return drv(r)
    return {}


def gid_index(dev):
    """The RoCEv2 IPv4 GID's index."""
    base = f'/sys/class/infiniband/{dev}/ports/1'
    for i in range(32):
        try:
            with open(f'{base}/gid_attrs/types/{i}') as f:
                typ = f.read().strip()
            with open(f'{base}/gids/{i}') as f:
                gid = f.read().strip()
        except OSError:
            continue
        if typ == 'RoCE v2' and gid.startswith('0000:0000:0000:0000:0000:ffff'):
            return i
    raise SystemExit(f'# no RoCE v2 IPv4 GID on {dev}')


class Side:
    def __init__(self, dev, cqe=64):
        self.ctx = Context(name=dev)
        self.gidx = gid_index(dev)
        self.gid = self.ctx.query_gid(1, self.gidx)
        self.pd = PD(self.ctx)
        self.mr = MR(self.pd, PAGES * 4096,
                     e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
        self.cq = CQ(self.ctx, cqe)

    def qp(self, rcq=None):
        cap = QPCap(max_send_wr=32, max_recv_wr=32, max_send_sge=1,
                    max_recv_sge=1)
        init = QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq,
                          rcq=rcq or self.cq, cap=cap)
        return QP(self.pd, init, QPAttr(port_num=1))


def connect(qp, side, peer_gid, peer_qpn, sq_psn, rq_psn, timeout):
    attr = QPAttr(port_num=1)
    attr.path_mtu = e.IBV_MTU_1024
    attr.max_dest_rd_atomic = 1
    attr.max_rd_atomic = 1
    attr.min_rnr_timer = 1      # 0.01 ms
    attr.timeout = timeout
    attr.retry_cnt = 7
    attr.rnr_retry = 7          # forever
    attr.dest_qp_num = peer_qpn
    attr.sq_psn = sq_psn
    attr.rq_psn = rq_psn
    attr.ah_attr = AHAttr(port_num=1, is_global=1,
                          gr=GlobalRoute(dgid=peer_gid,
                                         sgid_index=side.gidx))
    qp.to_rts(attr)


def post_recvs(qp, side, n):
    for _ in range(n):
        qp.post_recv(RecvWR(sg=[SGE(side.mr.buf, MSG, side.mr.lkey)],
                            num_sge=1))


def post_sends(qp, side, n):
    for _ in range(n):
        qp.post_send(SendWR(opcode=e.IBV_WR_SEND, num_sge=1,
                            sg=[SGE(side.mr.buf, MSG, side.mr.lkey)],
                            send_flags=e.IBV_SEND_SIGNALED))


def poll(cq, n, what):
    deadline = time.time() + 30 * SLOW
    got = 0
    while got < n:
        nc, wcs = cq.poll(n - got)
        for wc in wcs:
            if wc.status != e.IBV_WC_SUCCESS:
                raise SystemExit(f'# {what}: completion status {wc.status}')
        got += nc
        if time.time() > deadline:
            raise SystemExit(f'# {what}: {got} of {n} completions')
        if not nc:
            time.sleep(0.01)


def delta(after, before, key):
    return after.get(key, 0) - before.get(key, 0)


def check_fields(desc, entry, want):
    bad = {k: (entry.get(k), v) for k, v in want.items() if entry.get(k) != v}
    result(not bad, desc, f'field: (shown, expected): {bad}; entry {entry}')


def main():
    a = Side(DEV0)
    b = Side(DEV1)
    qa = a.qp()
    qb = b.qp()
    # Timeout 18 (1 s): no resend on a loss-free wire, even under TCG.
    connect(qa, a, b.gid, qb.qp_num, 100, 200, 18)
    connect(qb, b, a.gid, qa.qp_num, 200, 100, 18)

    # rdma res show: every object listed, driver details before traffic.
    check_fields(f'{DEV0}: res qp -dd: a fresh RC QP', qp_entry(DEV0, qa.qp_num),
                 {'state': 'RTS', 'sq-psn': 100, 'rq-psn': 200,
                  'sq_pi': 0, 'sq_ci': 0, 'sq_fetch': 0, 'rq_pi': 0,
                  'rq_ci': 0, 'sq_psn': 100, 'una_psn': 100, 'rq_psn': 200,
                  'msn': 0, 'retry': 0, 'retry_max': 7, 'rnr_retry': 0,
                  'mtu': 1024})
    mrs = [drv(r) for r in res('mr', DEV0)]
    mr = [m for m in mrs if m.get('pid') == os.getpid()]
    check_fields(f'{DEV0}: res mr -dd: type, length, pinned pages',
                 mr[0] if mr else {'missing': mrs},
                 {'mrlen': PAGES * 4096, 'type': 'user',
                  'length': PAGES * 4096, 'pinned_pages': PAGES,
                  'bound_mws': 0})
    check_addresses(a)
    pds = res('pd', DEV0)
    result(len(pds) >= 1, f'{DEV0}: res pd lists the PD', pds)
    cqs = [drv(r) for r in res('cq', DEV1)]
    result(len(cqs) == 1 and cqs[0].get('cq_pi') == 0 and
           cqs[0].get('overflowed') == 0 and cqs[0].get('cq_size', 0) >= 64,
           f'{DEV1}: res cq -dd: one CQ, empty', cqs)

    # Ten four-packet SENDs from DEV0 to DEV1: exact counts both ways.
    c0, c1 = counters(DEV0), counters(DEV1)
    post_recvs(qb, b, 10)
    post_sends(qa, a, 10)
    poll(a.cq, 10, 'sends')
    poll(b.cq, 10, 'receives')
    time.sleep(0.2)
    d0, d1 = counters(DEV0), counters(DEV1)
    print(f'# {DEV0} sent {delta(d0, c0, "sent_pkts")} pkts '
          f'{delta(d0, c0, "sent_bytes")} bytes, rcvd '
          f'{delta(d0, c0, "rcvd_pkts")}; retransmits '
          f'{delta(d0, c0, "retransmits")}')
    result(delta(d0, c0, 'sent_pkts') == 40 and
           delta(d1, c1, 'rcvd_pkts') == 40,
           'counters: 40 request packets sent and received',
           f'{delta(d0, c0, "sent_pkts")} {delta(d1, c1, "rcvd_pkts")}')
    result(delta(d0, c0, 'sent_bytes') == 40 * PKT_BYTES and
           delta(d1, c1, 'rcvd_bytes') == 40 * PKT_BYTES,
           f'counters: {40 * PKT_BYTES} bytes sent and received',
           f'{delta(d0, c0, "sent_bytes")} {delta(d1, c1, "rcvd_bytes")}')
    result(delta(d1, c1, 'sent_pkts') == delta(d0, c0, 'rcvd_pkts') and
           delta(d1, c1, 'acks_sent') >= 1 and
           delta(d1, c1, 'sent_pkts') == delta(d1, c1, 'acks_sent'),
           'counters: the ACKs sent are the packets received back',
           f'{d1} {c1}')
    result(all(delta(d0, c0, k) == 0 and delta(d1, c1, k) == 0
               for k in ('retransmits', 'nak_sent', 'nak_rcvd',
                         'rcvd_dropped', 'icrc_errors', 'cq_overflows')),
           'counters: no error counted on a clean wire', f'{d0} {d1}')
    check_fields(f'{DEV0}: res qp -dd: indices and PSNs after 10 SENDs',
                 qp_entry(DEV0, qa.qp_num),
                 {'sq_pi': 10, 'sq_fetch': 10, 'sq_ci': 10, 'sq_psn': 140,
                  'una_psn': 140, 'sq-psn': 140, 'retry': 0})
    check_fields(f'{DEV1}: res qp -dd: the receiver\'s RQ, PSN and MSN',
                 qp_entry(DEV1, qb.qp_num),
                 {'rq_pi': 10, 'rq_ci': 10, 'rq_psn': 140, 'rq-psn': 140,
                  'msn': 10})
    cqs = [drv(r) for r in res('cq', DEV1)]
    check_fields(f'{DEV1}: res cq -dd: 10 CQEs written and polled',
                 cqs[0] if cqs else {}, {'cq_pi': 10, 'cq_ci': 10,
                                         'overflowed': 0})

    # RNR: a SEND with no receive posted is NAKed until one is.
    c0, c1 = counters(DEV0), counters(DEV1)
    post_sends(qa, a, 1)
    deadline = time.time() + 10 * SLOW
    while counters(DEV0).get('rnr_nak_rcvd', 0) == c0.get('rnr_nak_rcvd', 0):
        if time.time() > deadline:
            break
        time.sleep(0.05)
    post_recvs(qb, b, 1)
    poll(a.cq, 1, 'RNR send')
    poll(b.cq, 1, 'RNR receive')
    d0, d1 = counters(DEV0), counters(DEV1)
    result(delta(d1, c1, 'rnr_nak_sent') >= 1 and
           delta(d0, c0, 'rnr_nak_rcvd') == delta(d1, c1, 'rnr_nak_sent'),
           'counters: RNR NAKs sent and received',
           f'{delta(d1, c1, "rnr_nak_sent")} {delta(d0, c0, "rnr_nak_rcvd")}')
    result(delta(d1, c1, 'rcvd_dropped') >= delta(d1, c1, 'rnr_nak_sent'),
           'counters: rcvd_dropped counts the requests RNR NAKed',
           f'{d1} {c1}')

    # Loss on the wire: sequence NAKs and retransmissions repair it.
    c0, c1 = counters(DEV0), counters(DEV1)
    subprocess.run(['tc', 'qdisc', 'add', 'dev', NDEV0, 'root', 'netem',
                    'loss', '10%'], check=True)
    try:
        for _ in range(3):
            post_recvs(qb, b, 20)
            post_sends(qa, a, 20)
            poll(a.cq, 20, 'sends under loss')
            poll(b.cq, 20, 'receives under loss')
    finally:
        subprocess.run(['tc', 'qdisc', 'del', 'dev', NDEV0, 'root'])
    d0, d1 = counters(DEV0), counters(DEV1)
    for k in ('retransmits', 'nak_rcvd', 'seq_errors', 'nak_sent'):
        print(f'# under loss: {k} {delta(d0, c0, k)} / {delta(d1, c1, k)}')
    result(delta(d0, c0, 'retransmits') >= 1,
           'counters: retransmits under 10% loss', f'{d0} {c0}')
    result(delta(d1, c1, 'nak_sent') >= 1 and
           delta(d0, c0, 'nak_rcvd') >= 1 and
           delta(d0, c0, 'nak_rcvd') <= delta(d1, c1, 'nak_sent'),
           'counters: sequence NAKs sent and received', f'{d0} {d1}')
    result(delta(d1, c1, 'seq_errors') >= 1 and
           delta(d1, c1, 'rcvd_dropped') >= delta(d1, c1, 'seq_errors'),
           'counters: requests out of sequence dropped', f'{d1} {c1}')
    result(delta(d0, c0, 'sent_pkts') - delta(d1, c1, 'rcvd_pkts') >= 1,
           'counters: packets lost on the wire: sent > received',
           f'{delta(d0, c0, "sent_pkts")} {delta(d1, c1, "rcvd_pkts")}')
    check_fields(f'{DEV0}: res qp -dd: PSNs after the lossy stream',
                 qp_entry(DEV0, qa.qp_num),
                 {'sq_pi': 71, 'sq_ci': 71, 'sq_psn': 140 + 4 + 240,
                  'sq-psn': 384, 'una_psn': 384, 'retry': 0,
                  'rnr_retry': 0})

    # Bad packets to DEV1's address: a bad ICRC, a truncated header.
    c1 = counters(DEV1)
    bth = struct.pack('>BBHII', 0x04, 0, 0xffff, qb.qp_num, 0)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(bth + b'\0' * 4 + b'\xde\xad\xbe\xef', (IP1, 4791))
    s.sendto(b'\x04\0\0', (IP1, 4791))
    s.close()
    deadline = time.time() + 5 * SLOW
    while time.time() < deadline:
        d1 = counters(DEV1)
        if delta(d1, c1, 'malformed') and delta(d1, c1, 'icrc_errors'):
            break
        time.sleep(0.05)
    result(delta(d1, c1, 'icrc_errors') == 1,
           'counters: a packet with a bad ICRC', f'{d1} {c1}')
    result(delta(d1, c1, 'malformed') == 1,
           'counters: a truncated packet', f'{d1} {c1}')
    result(delta(d1, c1, 'rcvd_dropped') == 2 and
           delta(d1, c1, 'rcvd_pkts') == 0,
           'counters: both dropped, none received', f'{d1} {c1}')

    # CQ overflow: eight receives into a CQ of two entries on DEV0 alone,
    # as packets (the loopback path would move them without any).
    local_direct('0')
    c0 = counters(DEV0)
    small = CQ(a.ctx, 1)
    qs, qr = a.qp(), a.qp(rcq=small)
    connect(qs, a, a.gid, qr.qp_num, 0, 0, 18)
    connect(qr, a, a.gid, qs.qp_num, 0, 0, 18)
    post_recvs(qr, a, 8)
    post_sends(qs, a, 8)
    deadline = time.time() + 10 * SLOW
    while time.time() < deadline:
        d0 = counters(DEV0)
        if delta(d0, c0, 'cq_overflows'):
            break
        time.sleep(0.05)
    result(delta(d0, c0, 'cq_overflows') >= 1,
           'counters: CQ overflow', f'{d0} {c0}')
    result(delta(d0, c0, 'loopback_pkts') >= 32,
           'counters: packets delivered inside the device', f'{d0} {c0}')
    local_direct('1')
    cqs = [drv(r) for r in res('cq', DEV0)]
    result(sum(1 for c in cqs if c.get('overflowed') == 1) == 1 and
           len(cqs) == 2,
           f'{DEV0}: res cq -dd: the overflowed CQ marked', cqs)
    check_rx_bound(b)
    print('# done')


if __name__ == '__main__':
    main()
