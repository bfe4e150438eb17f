#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""rds.sh's RDS program: messages and RDMA between two RDS sockets.

  rds_xfer.py xfer [--both] [--rdma PLAN] [--timeout S] IP_A IP_B PORT PLAN
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

info prints RDS's connections ("conn LADDR FADDR TRANSPORT FLAGS"), its IB
connections ("ibconn SRC DST ...") and its counters ("counter NAME VALUE").
bind tries to bind an RDS socket on the IB transport to IP: RDS accepts
only an address of an RDMA device.  Exit status 0 if all went right.
"""

import argparse
import ctypes
import errno
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


def rds_socket(ip=None, port=0, bufsize=16 << 20, rcvbuf=16 << 20):
    s = socket.socket(socket.AF_RDS, socket.SOCK_SEQPACKET, 0)
    s.setsockopt(SOL_RDS, SO_RDS_TRANSPORT, RDS_TRANS_IB)
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
    sub.add_parser('info')
    bp = sub.add_parser('bind')
    bp.add_argument('ip')
    args = p.parse_args()
    return {'xfer': xfer, 'info': info, 'bind': bind}[args.cmd](args)


if __name__ == '__main__':
    sys.exit(main())
