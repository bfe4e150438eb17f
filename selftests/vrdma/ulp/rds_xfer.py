#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""rds.sh's RDS program: messages and RDMA between two RDS sockets.

  rds_xfer.py xfer [--both] [--rdma PLAN] [--timeout S] IP_A IP_B PORT PLAN
  rds_xfer.py atomic [--tos TOS] [--count N] [--timeout S] [--refused]
                     IP_A IP_B PORT
  rds_xfer.py info
  rds_xfer.py bind IP

xfer binds one RDS socket to IP_A:PORT and one to IP_B:PORT, both forced
onto the IB transport (SO_RDS_TRANSPORT, RDS over RDMA), and sends PLAN's
messages from A to B (with --both from B to A too, at the same time).
PLAN is a comma list of SIZExCOUNT ("1x2000,65536x100"); SIZE "rand" is
COUNT sizes from 1 B to RDS's largest message, the same every run.  Each
message's bytes follow from its sequence number and size, so the receiver
checks every byte and its size and sender, and finds a message lost,
duplicated, reordered or corrupted: a lost one shifts all that follow.
After the last one no more may come.  --rdma PLAN then has B map a buffer
for A (RDS_CMSG_RDMA_MAP, the cookie sent with a message) and A RDMA WRITE
its pattern into it, and map it again for A to RDMA READ it back
(RDS_CMSG_RDMA_ARGS), each checked byte for byte, the WRITE by B when A's
message that carries it arrives, the READ by A when RDS reports it done.

atomic has B map a page for A (RDS_CMSG_RDMA_MAP) and A send RDS's
atomics at words in it (RDS_CMSG_ATOMIC_CSWP, _FADD, RDS_CMSG_MASKED_
ATOMIC_CSWP, _FADD), each with RDS_RDMA_NOTIFY_ME: the notice must say
done (status 0), the word A gets back must be the one B had, and B's word
must then be what a model here computes: fixed cases (compare hit and
miss, masks of fields, wrap-around at 2^64), then N random ones on one
word.  RDS hands the device every atomic as a masked one
(IB_WR_MASKED_ATOMIC_*: a plain CSWP compares and swaps under masks of all
ones, a plain FADD adds with no carry dropped).  Last a cookie of no MR and
an address past B's MR must fail (a status not 0, or sendmsg refuses),
B's page untouched.  A's socket uses TOS TOS (and TOS + 1, TOS + 2 for
the two that fail), so its RDS connections are its own: one an atomic
broke (an error completion drops the connection, and RDS sends the
message again on the next one) leaves the others alone.  RDS registers
the MRs it maps (REG_MR, net/rds/ib_frmr.c) with REMOTE_READ and
REMOTE_WRITE but without REMOTE_ATOMIC, so a device that checks an
atomic's rkey for that right, as the IBA requires, answers every RDS
atomic with a remote access error (status 1, RDS_RDMA_REMOTE_ERROR).
With --refused that is what is checked: one atomic of each kind, each
on a connection of its own (TOS, TOS + 1, ...), must end with status 1,
B's page unchanged.

info prints RDS's connections ("conn LADDR FADDR TRANSPORT FLAGS"), its IB
connections ("ibconn SRC DST ...") and its counters ("counter NAME VALUE").
bind tries to bind an RDS socket on the IB transport to IP: RDS accepts
only an address of an RDMA device.  Exit status 0 if all went right.
"""

import argparse
import ctypes
import errno
import fcntl
import mmap
import os
import random
import socket
import struct
import sys
import threading
import time

SOL_RDS = 276
RDS_GET_MR = 2
RDS_FREE_MR = 3
SO_RDS_TRANSPORT = 8
RDS_TRANS_IB = 0
RDS_INFO_COUNTERS = 10000
RDS_INFO_CONNECTIONS = 10001
RDS_INFO_IB_CONNECTIONS = 10008
RDS_CMSG_RDMA_ARGS = 1
RDS_CMSG_RDMA_DEST = 2
RDS_CMSG_RDMA_MAP = 3
RDS_CMSG_RDMA_STATUS = 4
RDS_CMSG_ATOMIC_FADD = 6
RDS_CMSG_ATOMIC_CSWP = 7
RDS_CMSG_MASKED_ATOMIC_FADD = 8
RDS_CMSG_MASKED_ATOMIC_CSWP = 9
# struct rds_rdma_notify's status
RDS_RDMA_STATUS = ['SUCCESS', 'REMOTE_ERROR', 'CANCELED', 'DROPPED',
                   'OTHER_ERROR']
SIOCRDSSETTOS = 0x89e0
RDS_RDMA_READWRITE = 0x1
RDS_RDMA_FENCE = 0x2
RDS_RDMA_INVALIDATE = 0x4
RDS_RDMA_NOTIFY_ME = 0x20
# asm-generic/socket.h; Python's socket module has not these.
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33
# RDS_MAX_MSG_SIZE (net/rds/rds.h)
MAX_MSG = 1 << 20

PAT_MOD = 4093
PATTERN = random.Random(0x5d5).randbytes(MAX_MSG + PAT_MOD)


def msg_bytes(seq, size):
    """The message seq of size bytes: the pattern at an offset of seq's,
    its first bytes seq itself."""
    off = (seq * 977) % PAT_MOD
    head = struct.pack('<Q', seq)[:min(size, 8)]
    return head + PATTERN[off + len(head):off + size]


def parse_plan(plan):
    sizes = []
    for part in plan.split(','):
        size, _, count = part.partition('x')
        if size == 'rand':
            rng = random.Random(0x1eaf)
            sizes += [min(MAX_MSG, int(2 ** rng.uniform(0, 20.05)))
                      for _ in range(int(count))]
        else:
            sizes += [int(size)] * int(count)
    return sizes


def rds_socket(ip=None, port=0, bufsize=16 << 20, rcvbuf=16 << 20, tos=0):
    s = socket.socket(socket.AF_RDS, socket.SOCK_SEQPACKET, 0)
    s.setsockopt(SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_IB)
    if tos:
        # Its own RDS connection (and QP) to each peer, before it has one.
        fcntl.ioctl(s.fileno(), SIOCRDSSETTOS, struct.pack('B', tos))
    # RDS refuses a message larger than half the send buffer, and stops
    # its senders while the receiver has half its buffer queued.
    s.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, bufsize)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
    if ip is not None:
        s.bind((ip, port))
        t = struct.unpack('i', s.getsockopt(SOL_RDS, SO_RDS_TRANSPORT, 4))[0]
        if t != RDS_TRANS_IB:
            raise OSError(f'{ip}: bound on transport {t}, not IB')
    return s


def set_rcvtimeo(s, secs):
    """A receive waits at most secs, then fails with ETIMEDOUT (RDS's
    recvmsg) or EAGAIN."""
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO,
                 struct.pack('ll', int(secs), 0))


class Stream:
    """One direction: sizes sent from src's socket to dst's, checked."""

    def __init__(self, name, ssock, rsock, saddr, raddr, sizes, timeout):
        self.name, self.ssock, self.rsock = name, ssock, rsock
        self.saddr, self.raddr = saddr, raddr
        self.sizes, self.timeout = sizes, timeout
        self.errors = []
        self.received = self.rbytes = self.sent = 0

    def error(self, what):
        self.errors.append(what)

    def send(self):
        try:
            for seq, size in enumerate(self.sizes):
                n = self.ssock.sendto(msg_bytes(seq, size), self.raddr)
                if n != size:
                    self.error(f'sent {n} of {size} bytes of #{seq}')
                    return
                self.sent += 1
        except OSError as e:
            self.error(f'send #{self.sent} ({self.sizes[self.sent]} B): {e}')

    def recv(self):
        buf = bytearray(MAX_MSG + 1)
        view = memoryview(buf)
        try:
            for seq, size in enumerate(self.sizes):
                try:
                    n, addr = self.rsock.recvfrom_into(buf)
                except (BlockingIOError, TimeoutError):
                    self.error(f'no message #{seq} in {self.timeout} s '
                               f'({self.sent} sent)')
                    return
                if addr != self.saddr:
                    self.error(f'#{seq} from {addr}, not {self.saddr}')
                    return
                want = msg_bytes(seq, size)
                if n != size or view[:n] != want:
                    self.error(diagnose(seq, size, view[:n], want))
                    return
                self.received += 1
                self.rbytes += n
        except OSError as e:
            self.error(f'recv #{self.received}: {e}')


def diagnose(seq, size, got, want):
    """Why message seq is wrong: which one came instead, or where its bytes
    differ."""
    n = len(got)
    what = f'#{seq} ({size} B): got {n} B'
    if n >= 8:
        other = struct.unpack('<Q', got[:8])[0]
        if other != seq:
            kind = 'lost' if other > seq else 'duplicated or reordered'
            return f'{what} of #{other}: a message {kind}'
    if n == size:
        i = next(i for i in range(n) if got[i] != want[i])
        return (f'{what}, byte {i} is {got[i]:#04x}, '
                f'not {want[i]:#04x}: corrupted')
    return f'{what}: wrong size'


def nothing_more(socks, secs):
    """No message left on any of socks within secs."""
    extra = []
    for s in socks:
        set_rcvtimeo(s, secs)
        try:
            data, addr = s.recvfrom(MAX_MSG + 1)
            extra.append(f'an extra message of {len(data)} B from {addr}')
        except (BlockingIOError, TimeoutError):
            pass
    return extra


class Buf:
    """A page-aligned buffer and its address, for RDS's RDMA."""

    def __init__(self, size):
        self.mm = mmap.mmap(-1, max(size, 1))
        self.size = size
        self.addr = ctypes.addressof(ctypes.c_char.from_buffer(self.mm))

    def fill(self, data):
        self.mm[:len(data)] = data

    def data(self):
        return self.mm[:self.size]


def recv_cmsg(s, ctype):
    """The next message or notification on s: (data, cmsg data of type
    ctype or None)."""
    data, anc, flags, addr = s.recvmsg(MAX_MSG + 1, socket.CMSG_SPACE(64))
    for level, t, cdata in anc:
        if level == SOL_RDS and t == ctype:
            return data, cdata
    return data, None


def rdma_round(a, b, addr_a, addr_b, seq, size, write):
    """B maps a buffer for A, A RDMA WRITEs into it (write) or READs it,
    every byte checked.  Returns an error string or None."""
    op = 'WRITE' if write else 'READ'
    what = f'RDMA {op} #{seq} ({size} B)'
    want = msg_bytes(seq, size)
    remote, local = Buf(size), Buf(size)
    if write:
        local.fill(want)
    else:
        remote.fill(want)
    cookie = ctypes.c_uint64(0)
    mr = struct.pack('<QQQQ', remote.addr, size, ctypes.addressof(cookie), 0)
    b.sendmsg([struct.pack('<QQ', seq, size)],
              [(SOL_RDS, RDS_CMSG_RDMA_MAP, mr)], 0, addr_a)
    data, c = recv_cmsg(a, RDS_CMSG_RDMA_DEST)
    if c is None or struct.unpack('<QQ', data[:16]) != (seq, size):
        return f'{what}: no cookie from B (got {len(data)} B)'
    if struct.unpack('<Q', c[:8])[0] != cookie.value:
        return f'{what}: the cookie A got is not the one B mapped'
    iov = (ctypes.c_uint64 * 2)(local.addr, size)
    flags = RDS_RDMA_NOTIFY_ME
    flags |= RDS_RDMA_READWRITE if write else RDS_RDMA_FENCE
    args = struct.pack('<QQQQQQQ', cookie.value, 0, size,
                       ctypes.addressof(iov), 1, flags, seq)
    a.sendmsg([struct.pack('<Q', seq)],
              [(SOL_RDS, RDS_CMSG_RDMA_ARGS, args)], 0, addr_b)
    # A: the notification that its RDMA is done.
    data, c = recv_cmsg(a, RDS_CMSG_RDMA_STATUS)
    if c is None:
        return f'{what}: no completion notice for A (got {len(data)} B)'
    token, status = struct.unpack('<Qi', c[:12])
    if token != seq or status != 0:
        return f'{what}: A notified of #{token} with status {status}'
    # B: A's message, sent after the RDMA.
    data, _ = recv_cmsg(b, -1)
    if struct.unpack('<Q', data[:8])[0] != seq:
        return f'{what}: B got {len(data)} B, not A\'s message #{seq}'
    got = remote.data() if write else local.data()
    if got != want:
        i = next(i for i in range(size) if got[i] != want[i])
        return f'{what}: byte {i} is {got[i]:#04x}, not {want[i]:#04x}'
    b.setsockopt(SOL_RDS, RDS_FREE_MR,
                 struct.pack('<QQ', cookie.value, RDS_RDMA_INVALIDATE))
    return None


def xfer(args):
    sizes = parse_plan(args.plan)
    addr_a, addr_b = (args.ip_a, args.port), (args.ip_b, args.port)
    # Both ends are in one kernel, so RDS keeps one congestion map per
    # address for both: a map update from the peer overwrites the
    # receiver's own live map, and one that crosses a newer change leaves
    # a port marked congested for good (rds_cong_wait() has no timeout).
    # A receive buffer that holds the whole plan (half of it counts) keeps
    # every port uncongested, however slowly the checks here read.
    rcvbuf = max(16 << 20, 2 * (sum(sizes) + MAX_MSG))
    a = rds_socket(*addr_a, rcvbuf=rcvbuf)
    b = rds_socket(*addr_b, rcvbuf=rcvbuf)
    for s in a, b:
        set_rcvtimeo(s, args.timeout)
    streams = [Stream('A->B', a, b, addr_a, addr_b, sizes, args.timeout)]
    if args.both:
        streams.append(Stream('B->A', b, a, addr_b, addr_a, sizes,
                              args.timeout))
    # RDS's largest message is 1 MiB.
    try:
        a.sendto(bytes(MAX_MSG + 1), addr_b)
        print(f'rds_xfer: {MAX_MSG + 1} B sent, not refused')
    except OSError as e:
        print(f'rds_xfer: {MAX_MSG + 1} B refused: '
              f'{errno.errorcode.get(e.errno, e.errno)}')
    t0 = time.monotonic()
    receivers, senders = [], []
    for st in streams:
        receivers.append(threading.Thread(target=st.recv, daemon=True))
        senders.append(threading.Thread(target=st.send, daemon=True))
    for t in receivers + senders:
        t.start()
    # A receiver ends by itself: done, wrong, or no message for timeout
    # seconds.  A sender blocks for ever if RDS stops moving (its
    # congestion wait has no timeout): it gets that long more, then
    # counts as stuck.
    last = 0
    while any(t.is_alive() for t in receivers):
        for t in receivers:
            t.join(10)
        if args.progress and time.monotonic() - last >= 30:
            last = time.monotonic()
            for st in streams:
                print(f'rds_xfer: {st.name}: {st.sent} sent, '
                      f'{st.received} received', file=sys.stderr, flush=True)
    for st, t in zip(streams, senders):
        t.join(args.timeout)
        if t.is_alive():
            st.error(f'sender stuck after {st.sent} sent')
    secs = time.monotonic() - t0
    ok = True
    for st in streams:
        mb = st.rbytes / secs / 1e6
        print(f'rds_xfer: {st.name}: {st.received} of {len(st.sizes)} '
              f'messages, {st.rbytes} bytes received and verified '
              f'in {secs:.1f} s ({mb:.1f} MB/s)')
        for e in st.errors:
            print(f'rds_xfer: {st.name}: {e}')
        ok = ok and not st.errors
    if not ok:
        sys.stdout.flush()
        os._exit(1)
    for e in nothing_more([a, b], 1):
        print(f'rds_xfer: {e}')
        ok = False
    if ok and args.rdma:
        set_rcvtimeo(a, args.timeout)
        set_rcvtimeo(b, args.timeout)
        done = nbytes = 0
        t0 = time.monotonic()
        try:
            for seq, size in enumerate(parse_plan(args.rdma)):
                for write in True, False:
                    e = rdma_round(a, b, addr_a, addr_b, seq, size, write)
                    if e:
                        print(f'rds_xfer: {e}')
                        ok = False
                        break
                    done += 1
                    nbytes += size
                if not ok:
                    break
        except OSError as e:
            print(f'rds_xfer: RDMA after {done} operations: {e}')
            ok = False
        print(f'rds_xfer: RDMA: {done} WRITEs and READs, {nbytes} bytes '
              f'verified in {time.monotonic() - t0:.1f} s')
        for e in nothing_more([a, b], 1):
            print(f'rds_xfer: after RDMA: {e}')
            ok = False
    a.close()
    b.close()
    if ok:
        print('rds_xfer: ok')
    return 0 if ok else 1


M64 = (1 << 64) - 1
ATOMIC_NAME = {RDS_CMSG_ATOMIC_CSWP: 'CSWP', RDS_CMSG_ATOMIC_FADD: 'FADD',
               RDS_CMSG_MASKED_ATOMIC_CSWP: 'masked CSWP',
               RDS_CMSG_MASKED_ATOMIC_FADD: 'masked FADD'}


def masked_cswp(orig, compare, swap, compare_mask, swap_mask):
    """The word after a masked compare-and-swap: the bits of swap_mask
    swapped if orig and compare agree on every bit of compare_mask."""
    if (orig ^ compare) & compare_mask:
        return orig
    return (orig & ~swap_mask | swap & swap_mask) & M64


def masked_fadd(orig, add, nocarry):
    """The word after a masked fetch-and-add: a sum of fields, the carry
    out of each bit set in nocarry dropped (0: a plain 64-bit add)."""
    return (((orig & ~nocarry) + (add & ~nocarry)) ^
            ((orig ^ add) & nocarry)) & M64


def masked_fadd_bits(orig, add, nocarry):
    """masked_fadd() bit by bit, the reference it is checked against."""
    new = carry = 0
    for i in range(64):
        a, b = orig >> i & 1, add >> i & 1
        new |= (a ^ b ^ carry) << i
        carry = (a & b) | (a & carry) | (b & carry)
        if nocarry >> i & 1:
            carry = 0
    return new


def atomic_model(kind, orig, v):
    """B's word after the atomic of cmsg type kind with values v."""
    if kind == RDS_CMSG_ATOMIC_CSWP:
        return masked_cswp(orig, v[0], v[1], M64, M64)
    if kind == RDS_CMSG_MASKED_ATOMIC_CSWP:
        return masked_cswp(orig, *v)
    if kind == RDS_CMSG_ATOMIC_FADD:
        return masked_fadd(orig, v[0], 0)
    return masked_fadd(orig, *v)


def model_selftest():
    """The model's FADD against its bit-by-bit reference, and a few results
    worked out by hand.  Returns an error string or None."""
    rng = random.Random(0xfadd)
    masks = [0, M64, 1 << 63, 0x8000800080008000, 0x8080808080808080]
    for i in range(1000):
        o, a = rng.getrandbits(64), rng.getrandbits(64)
        m = masks[i] if i < len(masks) else rng.getrandbits(64)
        if masked_fadd(o, a, m) != masked_fadd_bits(o, a, m):
            return f'model: masked FADD {o:#x} + {a:#x} under {m:#x}'
    known = [
        (masked_fadd(M64, 2, 0), 1),
        (masked_fadd(M64, 1, 0x8000800080008000), 0xffffffffffff0000),
        (masked_fadd(M64, 0x0001000100010001, 0x8000800080008000), 0),
        (masked_fadd(M64, 0x0001000100010001, 0), 0x0001000100010000),
        (masked_fadd(0x7f80ff01fe00ff80, 0x0181010203ff0180,
                     0x8080808080808080), 0x8001000301ff0000),
        (masked_fadd(0x7f80ff01fe00ff80, 0x0181010203ff0180, 0),
         0x8102000402000100),
        (masked_cswp(0x1234, 0xff34, 0xabcd, 0xff, 0xf0f0), 0xa2c4),
        (masked_cswp(0x1234, 0x1235, 0xabcd, 0xff, 0xf0f0), 0x1234),
    ]
    for i, (got, want) in enumerate(known):
        if got != want:
            return f'model: worked example {i} gives {got:#x}, not {want:#x}'
    return None


def atomic_fixed_cases():
    """(what, word before, kind, values) of the fixed cases."""
    C, F = RDS_CMSG_ATOMIC_CSWP, RDS_CMSG_ATOMIC_FADD
    MC, MF = RDS_CMSG_MASKED_ATOMIC_CSWP, RDS_CMSG_MASKED_ATOMIC_FADD
    w = 0x0123456789abcdef
    f16, f8 = 0x8000800080008000, 0x8080808080808080
    return [
        ('CSWP, compare hit', w, C, (w, 0xfedcba9876543210)),
        ('CSWP, compare miss', w, C, (w ^ 1 << 40, 0xfedcba9876543210)),
        ('CSWP of 0 and all ones', 0, C, (0, M64)),
        ('FADD', w, F, (0x1111,)),
        ('FADD, wraps at 2^64', M64, F, (2,)),
        ('FADD of 2^63 to 2^63', 1 << 63, F, (1 << 63,)),
        ('FADD of 0', w, F, (0,)),
        ('masked CSWP, hit inside compare_mask', w, MC,
         (w ^ 0xffff000000000000, 0xa5a5a5a5a5a5a5a5, 0x0000ffffffffffff,
          0x00000000ffff0000)),
        ('masked CSWP, miss inside compare_mask', w, MC,
         (w ^ 0x0000000100000000, 0xa5a5a5a5a5a5a5a5, 0x0000ffffffffffff,
          M64)),
        ('masked CSWP, compare_mask 0 (always swaps)', w, MC,
         (~w & M64, 0x5a5a5a5a5a5a5a5a, 0, 0xf0f0f0f0f0f0f0f0)),
        ('masked CSWP, swap_mask 0 (hit, nothing swapped)', w, MC,
         (w, M64, M64, 0)),
        ('masked CSWP, masks all ones (a plain CSWP)', w, MC,
         (w, 0xfedcba9876543210, M64, M64)),
        ('masked FADD, 16-bit fields, each overflows', M64, MF,
         (0x0001000100010001, f16)),
        ('masked FADD, 16-bit fields, carries inside each, one overflows',
         0x7fff00ff1234fffe, MF, (0x0001ff0100010001, f16)),
        ('masked FADD, 8-bit fields, some overflow',
         0x7f80ff01fe00ff80, MF, (0x0181010203ff0180, f8)),
        ('masked FADD, no carry dropped (a plain FADD)', M64, MF,
         (0x0001000100010001, 0)),
        ('masked FADD, every carry dropped (an XOR)', w, MF,
         (0xffff0000ffff0000, M64)),
    ]


def atomic_random_cases(rng, word, count):
    """count random atomics on one word, whose first value is word: (what,
    kind, values), about half the compares hitting."""
    kinds = [RDS_CMSG_ATOMIC_CSWP, RDS_CMSG_ATOMIC_FADD,
             RDS_CMSG_MASKED_ATOMIC_CSWP, RDS_CMSG_MASKED_ATOMIC_FADD]
    masks = [0, M64, 0x8000800080008000, 0x8080808080808080,
             0x8000000080000000, 1 << 63]
    ops = []

    def value():
        return rng.choice([rng.getrandbits(64), rng.getrandbits(8),
                           M64 - rng.getrandbits(8), 1 << 63])

    def mask():
        return rng.choice(masks) if rng.random() < 0.5 else \
            rng.getrandbits(64)
    for i in range(count):
        kind = rng.choice(kinds)
        if kind == RDS_CMSG_ATOMIC_CSWP:
            cmp = word if rng.random() < 0.5 else value()
            v = (cmp, value())
        elif kind == RDS_CMSG_ATOMIC_FADD:
            v = (value(),)
        elif kind == RDS_CMSG_MASKED_ATOMIC_CSWP:
            cm = mask()
            cmp = value()
            if rng.random() < 0.5:
                cmp = (word & cm) | (cmp & ~cm & M64)
            v = (cmp, value(), cm, mask())
        else:
            v = (value(), mask())
        ops.append((f'random #{i}', kind, v))
        word = atomic_model(kind, word, v)
    return ops


def atomic_args(kind, cookie, local, remote, values, token):
    """struct rds_atomic_args, with RDS_RDMA_NOTIFY_ME."""
    u = list(values) + [0] * (4 - len(values))
    return struct.pack('<QQQ4QQQ', cookie, local, remote, *u,
                       RDS_RDMA_NOTIFY_ME, token)


def atomic_one(a, b, addr_b, kind, cookie, local, remote, values, seq):
    """A sends atomic kind at remote (an offset in B's MR) with its message
    #seq, its result into the word at local.addr.  Returns (status, error
    string): status the notice's, None if sendmsg refused it."""
    local.fill(struct.pack('<Q', 0xdeadbeefdeadbeef))
    args = atomic_args(kind, cookie, local.addr, remote, values, seq)
    try:
        a.sendmsg([struct.pack('<Q', seq)], [(SOL_RDS, kind, args)], 0,
                  addr_b)
    except OSError as e:
        return None, f'sendmsg: {e}'
    try:
        data, c = recv_cmsg(a, RDS_CMSG_RDMA_STATUS)
    except (BlockingIOError, TimeoutError):
        return None, 'no completion notice for A (RDS_RDMA_NOTIFY_ME)'
    if c is None:
        return None, f'no completion notice for A (got {len(data)} B)'
    token, status = struct.unpack('<Qi', c[:12])
    if token != seq:
        return status, f'A notified of #{token}'
    return status, None


def status_name(status):
    if 0 <= status < len(RDS_RDMA_STATUS):
        return f'{status} (RDS_RDMA_{RDS_RDMA_STATUS[status]})'
    return str(status)


def atomic(args):
    e = model_selftest()
    if e:
        print(f'rds_xfer: atomics: {e}')
        return 1
    addr_a, addr_b = (args.ip_a, args.port), (args.ip_b, args.port)
    a = rds_socket(*addr_a, tos=args.tos)
    b = rds_socket(*addr_b)
    for s in a, b:
        set_rcvtimeo(s, args.timeout)
    # B's page, and its MR for A: the cookie comes with B's message.
    page = 4096
    remote, local = Buf(page), Buf(8)
    remote.fill(random.Random(0xa7).randbytes(page))
    cookie = ctypes.c_uint64(0)
    mr = struct.pack('<QQQQ', remote.addr, page, ctypes.addressof(cookie),
                     RDS_RDMA_READWRITE)
    b.sendmsg([b'mr'], [(SOL_RDS, RDS_CMSG_RDMA_MAP, mr)], 0, addr_a)
    data, c = recv_cmsg(a, RDS_CMSG_RDMA_DEST)
    if c is None or struct.unpack('<Q', c[:8])[0] != cookie.value:
        print(f'rds_xfer: atomics: no cookie from B (got {len(data)} B)')
        return 1
    counts = dict.fromkeys(ATOMIC_NAME, 0)
    seq = 0

    def run(what, off, kind, values):
        """One atomic at the word at off of B's page, checked."""
        nonlocal seq
        orig = struct.unpack('<Q', remote.mm[off:off + 8])[0]
        before = remote.data()
        want = atomic_model(kind, orig, values)
        desc = (f'#{seq} {what}: {ATOMIC_NAME[kind]} '
                f'{", ".join(hex(x) for x in values)} on {orig:#x}')
        status, err = atomic_one(a, b, addr_b, kind, cookie.value, local,
                                 off, values, seq)
        if err or status:
            err = err or f'status {status_name(status)}'
            if status == 1:
                err += (' (RDS\'s MRs grant no REMOTE_ATOMIC: see the '
                        'head of rds_xfer.py)')
            return f'{desc}: {err}'
        try:
            data, _ = recv_cmsg(b, -1)
        except (BlockingIOError, TimeoutError):
            return f'{desc}: B got no message #{seq}'
        if data != struct.pack('<Q', seq):
            return f'{desc}: B got {data[:16]!r}, not A\'s message'
        got = struct.unpack('<Q', local.mm[:8])[0]
        new = struct.unpack('<Q', remote.mm[off:off + 8])[0]
        if got != orig:
            return f'{desc}: A got {got:#x}, not the original word'
        if new != want:
            return f'{desc}: B\'s word is {new:#x}, not {want:#x}'
        after = remote.data()
        if after[:off] != before[:off] or after[off + 8:] != before[off + 8:]:
            return f'{desc}: B\'s page changed outside the word'
        seq += 1
        counts[kind] += 1
        return None

    if args.refused:
        return atomic_refused(args, a, b, addr_a, addr_b, remote, local,
                              cookie)
    err = None
    for i, (what, word, kind, values) in enumerate(atomic_fixed_cases()):
        # Each at a word of its own, the first at the start of the page.
        off = 8 * (i * 37 % (page // 8))
        remote.mm[off:off + 8] = struct.pack('<Q', word)
        err = run(what, off, kind, values)
        if err:
            break
    nfixed = seq
    off = page - 8
    rng = random.Random(0x5eed)
    if not err:
        word = rng.getrandbits(64)
        remote.mm[off:off + 8] = struct.pack('<Q', word)
        for what, kind, values in atomic_random_cases(rng, word, args.count):
            err = run(what, off, kind, values)
            if err:
                break
    ok = err is None
    final = struct.unpack('<Q', remote.mm[off:off + 8])[0]
    print(f'rds_xfer: atomics: {seq} done and right ({nfixed} fixed, '
          f'{seq - nfixed} random; ' +
          ', '.join(f'{n} {ATOMIC_NAME[k]}' for k, n in counts.items()) +
          (f'), the random ones\' word {final:#x} at last' if ok else ')'))
    if err:
        print(f'rds_xfer: atomics: {err}')
    a.close()
    # The two that must fail, each from a socket (and connection) of its
    # own: the error completion drops the connection, and RDS sends the
    # message again on the next one, until the socket is closed.
    bad = [('a cookie of no MR', (cookie.value ^ 0x00ffff00) & M64, 0),
           ('an address past B\'s MR', cookie.value, page)]
    for tos, (what, ck, off) in enumerate(bad, args.tos + 1):
        a = rds_socket(*addr_a, tos=tos)
        set_rcvtimeo(a, args.timeout)
        before = remote.data()
        status, err = atomic_one(a, b, addr_b, RDS_CMSG_ATOMIC_FADD, ck,
                                 local, off, (1,), seq)
        a.close()
        # RDS may have sent it again on a new connection meanwhile.
        time.sleep(1)
        how = None
        if status is None and err.startswith('sendmsg'):
            how, err = err, None
        elif status and not err:
            how = f'status {status_name(status)}'
        elif status == 0 and not err:
            err = 'done (status 0)'
        if not err and remote.data() != before:
            err = 'B\'s page changed'
        if err:
            print(f'rds_xfer: atomics: FADD at {what}: {err}')
            ok = False
        else:
            print(f'rds_xfer: atomics: FADD at {what} fails: {how}, '
                  'B\'s page unchanged')
        seq += 1
    b.setsockopt(SOL_RDS, RDS_FREE_MR,
                 struct.pack('<QQ', cookie.value, RDS_RDMA_INVALIDATE))
    for e in nothing_more([b], 1):
        print(f'rds_xfer: atomics: {e}')
        ok = False
    b.close()
    if ok:
        print('rds_xfer: atomics: ok')
    return 0 if ok else 1


def atomic_refused(args, a, b, addr_a, addr_b, remote, local, cookie):
    """--refused: the device checks an atomic's rkey for REMOTE_ATOMIC, which
    RDS's MRs lack: one atomic of each kind must end in a remote access
    error (RDS_RDMA_REMOTE_ERROR), B's page unchanged.  Each goes from a
    socket of its own: the error drops the connection, and RDS sends the
    message again on the next one until the socket is closed."""
    a.close()
    ok = True
    firsts = {}
    for what, word, kind, values in atomic_fixed_cases():
        firsts.setdefault(kind, (what, word, values))
    for seq, (kind, (what, word, values)) in enumerate(firsts.items()):
        remote.mm[0:8] = struct.pack('<Q', word)
        before = remote.data()
        a = rds_socket(*addr_a, tos=args.tos + seq)
        set_rcvtimeo(a, args.timeout)
        status, err = atomic_one(a, b, addr_b, kind, cookie.value, local, 0,
                                 values, seq)
        a.close()
        time.sleep(1)
        if not err and status != 1:
            err = f'status {status_name(status)}, not 1 (REMOTE_ERROR)'
        if not err and remote.data() != before:
            err = 'B\'s page changed'
        if err:
            print(f'rds_xfer: atomics: {what}: {err}')
            ok = False
        else:
            print(f'rds_xfer: atomics: {what}: refused (status 1), '
                  'B\'s page unchanged')
    for e in nothing_more([b], 1):
        print(f'rds_xfer: atomics: {e}')
        ok = False
    b.setsockopt(SOL_RDS, RDS_FREE_MR,
                 struct.pack('<QQ', cookie.value, RDS_RDMA_INVALIDATE))
    b.close()
    if ok:
        print('rds_xfer: atomics: ok')
    return 0 if ok else 1


LIBC = ctypes.CDLL(None, use_errno=True)


def info_get(s, opt, fmt):
    """One of RDS's info tables, as tuples of fmt (through libc: Python's
    getsockopt takes at most 1024 bytes)."""
    size = 1 << 16
    while True:
        buf = ctypes.create_string_buffer(size)
        n = ctypes.c_uint32(size)
        if LIBC.getsockopt(s.fileno(), SOL_RDS, opt, buf,
                           ctypes.byref(n)) >= 0:
            break
        e = ctypes.get_errno()
        # Too small: RDS says how much it needs.
        if e != errno.ENOSPC or n.value <= size:
            raise OSError(e, os.strerror(e))
        size = n.value
    raw = buf.raw[:n.value]
    n = struct.calcsize(fmt)
    return [struct.unpack(fmt, raw[i:i + n])
            for i in range(0, len(raw) - n + 1, n)]


def cstr(b):
    return b.split(b'\0')[0].decode()


def info(_args):
    s = socket.socket(socket.AF_RDS, socket.SOCK_SEQPACKET, 0)
    ip = socket.inet_ntoa
    for c in info_get(s, RDS_INFO_CONNECTIONS, '<QQ4s4s16sBB'):
        print(f'conn {ip(c[2])} {ip(c[3])} {cstr(c[4])} {c[5]}')
    for c in info_get(s, RDS_INFO_IB_CONNECTIONS, '=4s4s16s16s5IBBxxI'):
        print(f'ibconn {ip(c[0])} {ip(c[1])} sgid {c[2].hex()} '
              f'dgid {c[3].hex()} max_send_wr {c[4]} max_recv_wr {c[5]} '
              f'rdma_mr_max {c[7]} rdma_mr_size {c[8]}')
    for c in info_get(s, RDS_INFO_COUNTERS, '<32sQ'):
        print(f'counter {cstr(c[0])} {c[1]}')
    s.close()
    return 0


def bind(args):
    try:
        rds_socket(args.ip, 0).close()
    except OSError as e:
        print(f'rds_xfer: bind {args.ip}: {e}')
        return 1
    print(f'rds_xfer: bound to {args.ip}')
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = p.add_subparsers(dest='cmd', required=True)
    x = sub.add_parser('xfer')
    x.add_argument('--both', action='store_true')
    x.add_argument('--rdma', default='')
    x.add_argument('--timeout', type=int, default=30)
    x.add_argument('--progress', action='store_true')
    x.add_argument('ip_a')
    x.add_argument('ip_b')
    x.add_argument('port', type=int)
    x.add_argument('plan')
    at = sub.add_parser('atomic')
    at.add_argument('--tos', type=int, default=1)
    at.add_argument('--count', type=int, default=200)
    at.add_argument('--timeout', type=int, default=30)
    at.add_argument('--refused', action='store_true')
    at.add_argument('ip_a')
    at.add_argument('ip_b')
    at.add_argument('port', type=int)
    sub.add_parser('info')
    bp = sub.add_parser('bind')
    bp.add_argument('ip')
    args = p.parse_args()
    return {'xfer': xfer, 'atomic': atomic, 'info': info,
            'bind': bind}[args.cmd](args)


if __name__ == '__main__':
    sys.exit(main())
