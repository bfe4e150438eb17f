#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check that every RoCEv2 packet of a capture is well formed.

Every UDP packet to port 4791 in the pcap files is dissected from the IP
header to the ICRC, independently of the kernel's code, and must be a
valid RoCEv2 packet:

  IP      IPv4 without options, header checksum right, DF set, not a
          fragment, TTL > 0; or IPv6 with UDP as next header, hop limit > 0
  UDP     source port in the dynamic range (0xc000-0xffff), length equal to
          the IP payload, checksum 0 or right
  BTH     a known RC/UC/UD opcode, TVer 0, the default P_Key, reserved bits 0
  layout  the opcode's extension headers, payload and pad fit the length
          exactly; no payload (nor pad) where the opcode has none; at most
          4096 payload bytes; FIRST/MIDDLE packets a full path MTU without
          pad; pad bytes 0; RDMA WRITE ONLY payload = RETH DMA length
  AETH    a defined syndrome (ACK, RNR NAK, NAK codes 0-4)
  ICRC    right (icrc_kat.py's implementation, checked against rdma_rxe);
          on a FLUSH also rdma_rxe's form (Linux 6.2 to 6.12 at least),
          which covers the BTH, FETH and RETH a second time, counted apart

and, per connection, every RC request must have been answered: the
responder's last ACK or read response PSN covers the last request PSN.
FLUSHes with the IBA's ICRC sent to a peer named rxe* are left out of
that (and counted): such an rdma_rxe drops them, as its own ICRC differs.

Output is TAP, with the packets counted per opcode and sender; the exit
status is 0 only if every check passed.  --name ADDR=NAME labels senders
in the counts, --dump prints one line per packet (for debugging).
Without files it tests itself: the packets captured from rdma_rxe that
icrc_kat.py embeds must pass, and broken copies of them must not.

    roce_pcap.py [--name 10.0.0.1=vrdma ...] [--dump] a.pcap...
    roce_pcap.py                 # self-test
"""

import argparse
import collections
import ipaddress
import os
import struct
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from icrc_kat import (VECTORS, Tap, icrc, ip_datagram,  # noqa: E402
                      read_pcap, with_icrc)

ROCE_PORT = 4791

# Extension header lengths.
RETH, AETH, IMMDT, IETH, DETH, ATOMETH, ATOMACK = 16, 4, 4, 4, 8, 28, 8
# The FLUSH extended transport header; negative: an entry of exts is
# told apart by its value, and AETH, IMMDT and IETH are 4 bytes too.
FETH = -4

# Flags per opcode: P payload; F/M/L/O position (first, middle, last,
# only); Q request, R response; A answered by ACKs (RC requests).
_SEND_WRITE = [
    ("SEND_FIRST", (), "PF"),
    ("SEND_MIDDLE", (), "PM"),
    ("SEND_LAST", (), "PL"),
    ("SEND_LAST_WITH_IMMEDIATE", (IMMDT,), "PL"),
    ("SEND_ONLY", (), "PO"),
    ("SEND_ONLY_WITH_IMMEDIATE", (IMMDT,), "PO"),
    ("RDMA_WRITE_FIRST", (RETH,), "PF"),
    ("RDMA_WRITE_MIDDLE", (), "PM"),
    ("RDMA_WRITE_LAST", (), "PL"),
    ("RDMA_WRITE_LAST_WITH_IMMEDIATE", (IMMDT,), "PL"),
    ("RDMA_WRITE_ONLY", (RETH,), "PO"),
    ("RDMA_WRITE_ONLY_WITH_IMMEDIATE", (RETH, IMMDT), "PO"),
]
OPCODES = {}
for _i, (_n, _h, _f) in enumerate(_SEND_WRITE):
    OPCODES[0x00 + _i] = ("RC_" + _n, _h, _f + "QA")
    OPCODES[0x20 + _i] = ("UC_" + _n, _h, _f + "Q")
OPCODES.update({
    0x0C: ("RC_RDMA_READ_REQUEST", (RETH,), "OQA"),
    0x0D: ("RC_RDMA_READ_RESPONSE_FIRST", (AETH,), "PFR"),
    0x0E: ("RC_RDMA_READ_RESPONSE_MIDDLE", (), "PMR"),
    0x0F: ("RC_RDMA_READ_RESPONSE_LAST", (AETH,), "PLR"),
    0x10: ("RC_RDMA_READ_RESPONSE_ONLY", (AETH,), "POR"),
    0x11: ("RC_ACKNOWLEDGE", (AETH,), "OR"),
    0x12: ("RC_ATOMIC_ACKNOWLEDGE", (AETH, ATOMACK), "OR"),
    0x13: ("RC_COMPARE_SWAP", (ATOMETH,), "OQA"),
    0x14: ("RC_FETCH_ADD", (ATOMETH,), "OQA"),
    0x16: ("RC_SEND_LAST_WITH_INVALIDATE", (IETH,), "PLQA"),
    0x17: ("RC_SEND_ONLY_WITH_INVALIDATE", (IETH,), "POQA"),
    0x1C: ("RC_FLUSH", (FETH, RETH), "OQA"),
    0x1D: ("RC_ATOMIC_WRITE", (RETH,), "POQA"),
    0x64: ("UD_SEND_ONLY", (DETH,), "POQ"),
    0x65: ("UD_SEND_ONLY_WITH_IMMEDIATE", (DETH, IMMDT), "POQ"),
})

MTUS = (256, 512, 1024, 2048, 4096)


def psn_after(a, b):
    """PSN a is b or later (24-bit serial arithmetic)."""
    return ((a - b) & 0xFFFFFF) < 0x800000


def ip_checksum(hdr):
    s = sum(struct.unpack(f">{len(hdr) // 2}H", hdr))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s ^ 0xFFFF


def udp_checksum(pseudo, udp):
    if len(udp) % 2:
        udp += b"\0"
    s = ip_checksum(pseudo + udp) ^ 0xFFFF
    return s ^ 0xFFFF


class Packet:
    """One dissected RoCEv2 packet; .errors lists what is wrong with it."""

    def __init__(self, dgram):
        self.errors = []
        self.name = "?"
        self.flags = ""
        self.syndrome = None
        self.dissect(dgram)

    def bad(self, what):
        self.errors.append(what)

    def dissect_ip(self, d):
        version = d[0] >> 4
        if version == 4:
            ihl = (d[0] & 0x0F) * 4
            if ihl != 20:
                self.bad(f"IPv4 header length {ihl}")
            if ip_checksum(d[:ihl]) != 0:
                self.bad("IPv4 header checksum")
            frag = struct.unpack_from(">H", d, 6)[0]
            if not frag & 0x4000:
                self.bad("IPv4 DF not set")
            if frag & 0x2000 or frag & 0x1FFF:
                self.bad("IPv4 fragment")
            if d[8] == 0:
                self.bad("IPv4 TTL 0")
            self.tos = d[1]
            self.src = ipaddress.ip_address(d[12:16])
            self.dst = ipaddress.ip_address(d[16:20])
            pseudo = d[12:20] + struct.pack(">BBH", 0, 17, len(d) - ihl)
            return ihl, pseudo
        if d[6] != 17:
            self.bad("IPv6 next header is not UDP")
        if d[7] == 0:
            self.bad("IPv6 hop limit 0")
        self.tos = (struct.unpack_from(">H", d, 0)[0] >> 4) & 0xFF
        self.src = ipaddress.ip_address(d[8:24])
        self.dst = ipaddress.ip_address(d[24:40])
        pseudo = d[8:40] + struct.pack(">IxxxB", len(d) - 40, 17)
        return 40, pseudo

    def dissect(self, d):
        ip_len, pseudo = self.dissect_ip(d)
        udp = d[ip_len:]
        self.sport, _, ulen, csum = struct.unpack_from(">HHHH", udp)
        if self.sport < 0xC000:
            self.bad(f"UDP source port {self.sport} not in 0xc000-0xffff")
        if ulen != len(udp):
            self.bad(f"UDP length {ulen} != {len(udp)}")
        if csum and udp_checksum(pseudo, udp[:6] + b"\0\0" + udp[8:]) != csum:
            self.bad("UDP checksum")
        b = udp[8:]
        if len(b) < 12 + 4:
            self.bad("shorter than BTH + ICRC")
            return
        self.opcode, flags, self.pkey, qpn, apsn = \
            struct.unpack_from(">BBHII", b)
        self.se = bool(flags & 0x80)
        self.pad = (flags >> 4) & 3
        self.qpn = qpn & 0xFFFFFF
        self.fecn_becn = qpn >> 30
        self.ackreq = bool(apsn >> 31)
        self.psn = apsn & 0xFFFFFF
        self.bytes = len(b)
        if flags & 0x0F:
            self.bad(f"TVer {flags & 0x0F}")
        if self.pkey not in (0xFFFF, 0x7FFF):
            self.bad(f"P_Key 0x{self.pkey:04x}")
        if (qpn >> 24) & 0x3F:
            self.bad("BTH resv6a not 0")
        if (apsn >> 24) & 0x7F:
            self.bad("BTH resv7 not 0")
        if self.opcode not in OPCODES:
            self.bad(f"unknown opcode 0x{self.opcode:02x}")
            return
        self.name, exts, self.flags = OPCODES[self.opcode]
        hdr = 12 + sum(abs(e) for e in exts)
        self.paylen = len(b) - hdr - self.pad - 4
        if self.paylen < 0:
            self.bad(f"{len(b)} bytes: too short for headers and pad")
            return
        if "P" not in self.flags and (self.paylen or self.pad):
            self.bad(f"payload {self.paylen}/pad {self.pad} without one")
        if (self.paylen + self.pad) % 4:
            self.bad("payload + pad not whole words")
        if self.paylen > 4096:
            self.bad(f"payload {self.paylen} > 4096")
        if ("F" in self.flags or "M" in self.flags) and \
                (self.paylen not in MTUS or self.pad):
            self.bad(f"FIRST/MIDDLE payload {self.paylen} pad {self.pad}")
        if any(b[hdr + self.paylen:hdr + self.paylen + self.pad]):
            self.bad("pad bytes not 0")
        off = 12
        for e in exts:
            if e == RETH:
                self.dmalen = struct.unpack_from(">I", b, off + 12)[0]
            elif e == AETH:
                self.syndrome = b[off]
                self.msn = struct.unpack_from(">I", b, off)[0] & 0xFFFFFF
            off += abs(e)
        if self.name.endswith("RDMA_WRITE_ONLY") and \
                self.dmalen != self.paylen:
            self.bad(f"WRITE_ONLY payload {self.paylen} != "
                     f"DMA length {self.dmalen}")
        if self.name == "RC_ATOMIC_WRITE" and \
                (self.dmalen != 8 or self.paylen != 8):
            self.bad(f"ATOMIC_WRITE payload {self.paylen}, "
                     f"DMA length {self.dmalen}, not 8")
        if self.name.endswith("RDMA_WRITE_FIRST") and \
                self.dmalen <= self.paylen:
            self.bad(f"WRITE_FIRST DMA length {self.dmalen} "
                     f"<= payload {self.paylen}")
        if self.syndrome is not None:
            kind = self.syndrome >> 5
            if kind == 2 or (kind == 3 and self.syndrome & 0x1F > 4):
                self.bad(f"AETH syndrome 0x{self.syndrome:02x}")
        wire = struct.unpack("<I", d[-4:])[0]
        ours = icrc(d[:-4])
        self.rxe_icrc = (ours != wire and self.name == "RC_FLUSH" and
                         rxe_flush_icrc(d, ip_len, ours) == wire)
        if ours != wire and not self.rxe_icrc:
            self.bad(f"ICRC 0x{wire:08x}, computed 0x{ours:08x}")

    def syndrome_kind(self):
        if self.syndrome is None:
            return None
        kind = self.syndrome >> 5
        if kind == 0:
            return "ACK"
        if kind == 1:
            return "RNR_NAK"
        return f"NAK{self.syndrome & 0x1F}"

    def line(self):
        s = (f"{self.src} -> {self.dst} sport {self.sport} {self.name} "
             f"qp 0x{self.qpn:06x} psn {self.psn}"
             f"{' A' if self.ackreq else ''}{' SE' if self.se else ''}")
        if self.syndrome is not None:
            s += f" {self.syndrome_kind()}(0x{self.syndrome:02x}) msn {self.msn}"
        if "P" in self.flags:
            s += f" len {self.paylen} pad {self.pad}"
        return s


def rxe_flush_icrc(d, ip_len, ours):
    """rdma_rxe's ICRC of a FLUSH: the IBA's (@ours), continued over the
    BTH and everything after it up to the ICRC a second time."""
    return zlib.crc32(d[ip_len + 8:-4], ours)


def is_roce(dgram):
    v = dgram[0] >> 4
    ip_len = (dgram[0] & 0x0F) * 4 if v == 4 else 40
    proto = dgram[9] if v == 4 else dgram[6]
    return (proto == 17 and len(dgram) >= ip_len + 8 and
            struct.unpack_from(">H", dgram, ip_len + 2)[0] == ROCE_PORT)


def connections(pkts):
    """The RC connections: (requests, responses) per request flow.

    A request flow (A -> B, dest QP b) is paired with the response flow
    (B -> A) whose time span overlaps it most: the QP number of the
    requester does not appear in its requests.  Packets with errors are
    left out; responses is [] when none were seen.
    """
    req = collections.defaultdict(list)
    resp = collections.defaultdict(list)
    for t, p in pkts:
        if p.errors:
            continue
        if "A" in p.flags:
            req[(p.src, p.dst, p.qpn)].append((t, p))
        elif "R" in p.flags:
            resp[(p.src, p.dst, p.qpn)].append((t, p))
    for (a, b, q), rq in sorted(req.items(), key=lambda kv: kv[1][0][0]):
        t0, t1 = rq[0][0], rq[-1][0]
        best, best_overlap = [], -1.0
        for (ra, rb, _), rs in resp.items():
            if (ra, rb) != (b, a):
                continue
            ov = min(t1, rs[-1][0]) - max(t0, rs[0][0])
            if ov > best_overlap and rs[-1][0] >= t0:
                best, best_overlap = rs, ov
        yield (a, b, q), [p for _, p in rq], [p for _, p in best]


def dropped_by_rxe(p, dst, names):
    """A FLUSH with the IBA's ICRC sent to rdma_rxe, which drops it."""
    return (p.name == "RC_FLUSH" and not p.rxe_icrc and
            names.get(dst, "").startswith("rxe"))


def answered(conns, out, names):
    """Per RC connection, is the last request PSN covered by a response?"""
    bad = 0
    for (a, b, q), rq, rs in conns:
        dropped = [p for p in rq if dropped_by_rxe(p, b, names)]
        if dropped:
            out.append(f"{a} -> {b} QP 0x{q:06x}: {len(dropped)} FLUSH "
                       f"packets with the IBA's ICRC to rdma_rxe, which "
                       f"drops them, not counted as requests")
            rq = [p for p in rq if not dropped_by_rxe(p, b, names)]
            if not rq:
                continue
        last = rq[-1].psn
        for p in rq:                # the request PSN furthest ahead
            if psn_after(p.psn, last):
                last = p.psn
        if not rs:
            out.append(f"{a} -> {b} QP 0x{q:06x}: {len(rq)} requests, "
                       f"no response at all (last PSN {last})")
            bad += 1
            continue
        top = rs[0].psn
        for p in rs:
            if p.syndrome_kind() in (None, "ACK") and psn_after(p.psn, top):
                top = p.psn
        if not psn_after(top, last):
            out.append(f"{a} -> {b} QP 0x{q:06x}: requests up to PSN {last}, "
                       f"answered up to {top}")
            bad += 1
    return bad


def message_total(by_psn, psn, first, later):
    """The payload bytes of the message starting at @psn: a packet whose
    name ends in one of @first there, then ones ending in @later up to the
    LAST.  None if the capture lacks a packet of it."""
    total = 0
    want = first
    for _ in range(1 << 20):
        cand = [p for p in by_psn.get(psn, ()) if p.name.endswith(want)]
        if not cand:
            return None
        p = cand[0]
        total += p.paylen
        if "L" in p.flags or "O" in p.flags:
            return total
        want = later
        psn = (psn + 1) & 0xFFFFFF
    return None


def message_lengths(conns, out):
    """Multi-packet RDMA WRITEs and READ responses must carry exactly the
    RETH's DMA length: this checks the pad count of their last packets.
    Returns (messages checked, wrong)."""
    checked = bad = 0
    for (a, b, q), rq, rs in conns:
        reqs = {}
        for p in rq:
            reqs.setdefault(p.psn, []).append(p)
        resps = {}
        for p in rs:
            resps.setdefault(p.psn, []).append(p)
        for psn in sorted(reqs):
            p = reqs[psn][0]
            if p.name.endswith("RDMA_WRITE_FIRST"):
                total = message_total(reqs, psn, ("WRITE_FIRST",),
                                      ("WRITE_MIDDLE", "WRITE_LAST",
                                       "WRITE_LAST_WITH_IMMEDIATE"))
            elif p.name.endswith("READ_REQUEST") and p.dmalen:
                total = message_total(resps, psn,
                                      ("RESPONSE_FIRST", "RESPONSE_ONLY"),
                                      ("RESPONSE_MIDDLE", "RESPONSE_LAST"))
            else:
                continue
            if total is None:
                continue
            checked += 1
            if total != p.dmalen:
                bad += 1
                out.append(f"{a} -> {b} QP 0x{q:06x} PSN {psn} {p.name}: "
                           f"{total} bytes, DMA length {p.dmalen}")
    return checked, bad


def rebuild(dgram):
    """Fix the IPv4 header checksum and the ICRC after a change."""
    b = bytearray(dgram[:-4])
    if b[0] >> 4 == 4:
        b[10:12] = b"\0\0"
        b[10:12] = struct.pack(">H", ip_checksum(bytes(b[:20])))
    return with_icrc(bytes(b))


def self_test():
    """The rxe packets pass; each kind of damage to them is caught."""
    tap = Tap()
    for name, hexdata in VECTORS:
        p = Packet(bytes.fromhex(hexdata))
        tap.result(not p.errors and p.name == name.split()[-1],
                   f"{name}: {p.name} valid {'; '.join(p.errors)}")

    # An IPv4 RC SEND ONLY of 101 bytes: pad count 3.
    good = bytes.fromhex(VECTORS[0][1])
    ip, bth = 20, 28
    hdr = bth + 12

    def mutate(desc, expect, fn, fix=True):
        b = bytearray(good)
        fn(b)
        d = rebuild(bytes(b)) if fix else bytes(b)
        errors = Packet(d).errors
        tap.result(any(expect in e for e in errors),
                   f"caught: {desc} ({'; '.join(errors) or 'not caught'})")

    tap.result(Packet(good).pad == 3 and Packet(good).paylen == 101,
               "SEND ONLY of 101 bytes has pad 3")
    mutate("a pad byte not 0", "pad bytes",
           lambda b: b.__setitem__(hdr + 101, 1))
    mutate("a payload bit flipped", "ICRC",
           lambda b: b.__setitem__(hdr, b[hdr] ^ 1), fix=False)
    mutate("an ICRC bit flipped", "ICRC",
           lambda b: b.__setitem__(len(b) - 1, b[-1] ^ 0x80), fix=False)
    mutate("the IPv4 checksum wrong", "IPv4 header checksum",
           lambda b: b.__setitem__(11, b[11] ^ 1), fix=False)
    mutate("DF clear", "DF", lambda b: b.__setitem__(6, b[6] & ~0x40))
    mutate("TTL 0", "TTL", lambda b: b.__setitem__(8, 0))
    mutate("a low UDP source port", "source port",
           lambda b: b.__setitem__(ip, 0x12))
    mutate("a wrong UDP length", "UDP length",
           lambda b: b.__setitem__(ip + 5, b[ip + 5] + 4))
    mutate("a wrong UDP checksum", "UDP checksum",
           lambda b: b.__setitem__(ip + 7, 1))
    mutate("an unknown opcode (RD)", "unknown opcode",
           lambda b: b.__setitem__(bth, 0x40))
    mutate("an ACK with payload", "without one",
           lambda b: b.__setitem__(bth, 0x11))
    mutate("TVer 1", "TVer", lambda b: b.__setitem__(bth + 1, b[bth + 1] | 1))
    mutate("another P_Key", "P_Key", lambda b: b.__setitem__(bth + 2, 0x12))
    mutate("resv7 set", "resv7",
           lambda b: b.__setitem__(bth + 8, b[bth + 8] | 0x01))
    mutate("a SEND FIRST with pad (not a full MTU)", "FIRST/MIDDLE",
           lambda b: b.__setitem__(bth, 0x00))

    # The same as an RDMA WRITE ONLY: its RETH says 101 bytes, so a wrong
    # pad count, undetectable in a SEND, is caught.
    w = bytearray(good[:hdr] + struct.pack(">QII", 0x1000, 0x1234, 101) +
                  good[hdr:])
    w[bth] = 0x0A
    w[2:4] = struct.pack(">H", len(w))
    w[ip + 4:ip + 6] = struct.pack(">H", len(w) - ip)
    good = rebuild(bytes(w))
    hdr += 16
    tap.result(not Packet(good).errors, "RDMA WRITE ONLY of 101 bytes valid")
    mutate("WRITE ONLY pad count 2 instead of 3", "DMA length",
           lambda b: b.__setitem__(bth + 1, (b[bth + 1] & 0xCF) | 0x20))
    mutate("WRITE ONLY pad count 0 instead of 3", "DMA length",
           lambda b: b.__setitem__(bth + 1, b[bth + 1] & 0xCF))

    # A FLUSH (FETH, RETH, no payload) with the IBA's ICRC, and with
    # rdma_rxe's, which covers the BTH, FETH and RETH twice.
    f = bytearray(bytes.fromhex(VECTORS[0][1])[:bth + 12] +
                  struct.pack(">IQII", 0x10, 0x1000, 0x1234, 64))
    f[bth] = 0x1C
    f[bth + 1] &= 0xCF
    f[2:4] = struct.pack(">H", len(f) + 4)
    f[ip + 4:ip + 6] = struct.pack(">H", len(f) + 4 - ip)
    iba = rebuild(bytes(f) + b"\0" * 4)

    def rxe_form(d):
        c = rxe_flush_icrc(d, ip, icrc(d[:-4]))
        return d[:-4] + struct.pack("<I", c)

    p = Packet(iba)
    tap.result(not p.errors and not p.rxe_icrc,
               f"FLUSH with the IBA's ICRC valid {'; '.join(p.errors)}")
    p = Packet(rxe_form(iba))
    tap.result(not p.errors and p.rxe_icrc,
               f"FLUSH with rdma_rxe's ICRC valid {'; '.join(p.errors)}")
    d = bytearray(rxe_form(iba))
    d[-1] ^= 0x01
    tap.result(any("ICRC" in e for e in Packet(bytes(d)).errors),
               "caught: rdma_rxe's FLUSH ICRC with a bit flipped")
    tap.result(any("ICRC" in e for e in Packet(rxe_form(good)).errors),
               "caught: rdma_rxe's FLUSH ICRC on an RDMA WRITE ONLY")
    return tap.finish()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", action="append", default=[],
                    help="ADDR=NAME: label a sender in the counts")
    ap.add_argument("--dump", action="store_true",
                    help="print every RoCEv2 packet")
    ap.add_argument("pcap", nargs="*")
    args = ap.parse_args(argv[1:])
    if not args.pcap:
        return self_test()
    names = {}
    for n in args.name:
        addr, _, label = n.partition("=")
        names[ipaddress.ip_address(addr)] = label

    tap = Tap()
    pkts = []
    for path in args.pcap:
        for t, frame, linktype in read_pcap(path):
            dgram = ip_datagram(frame, linktype)
            if dgram is None or not is_roce(dgram):
                continue
            p = Packet(dgram)
            pkts.append((t, p))
            if args.dump:
                print(f"# {t:.6f} {p.line()}"
                      f"{' BAD: ' + '; '.join(p.errors) if p.errors else ''}")

    bad = [p for _, p in pkts if p.errors]
    for p in bad[:20]:
        print(f"# bad packet: {p.line()}: {'; '.join(p.errors)}")
    tap.result(len(pkts) > 0, f"{len(pkts)} RoCEv2 packets captured")
    tap.result(not bad, f"every packet is well-formed RoCEv2 with a right "
               f"ICRC ({len(bad)} bad)")

    # Counts per opcode and sender, NAKs, retransmissions, FECN/BECN.
    senders = sorted({names.get(p.src, str(p.src)) for _, p in pkts})
    count = collections.defaultdict(collections.Counter)
    extra = collections.Counter()
    seen = set()
    for _, p in pkts:
        who = names.get(p.src, str(p.src))
        count[p.name][who] += 1
        kind = p.syndrome_kind()
        if kind and kind != "ACK":
            extra[f"{kind} sent by {who}"] += 1
        if getattr(p, "fecn_becn", 0):
            extra[f"FECN/BECN set by {who}"] += 1
        if "Q" in p.flags:
            key = (p.src, p.dst, p.qpn, p.psn, p.opcode)
            if key in seen:
                extra[f"requests resent by {who}"] += 1
            seen.add(key)
        if p.pad:
            extra[f"packets with pad by {who}"] += 1
        if getattr(p, "rxe_icrc", False):
            extra[f"FLUSHes with rdma_rxe's ICRC by {who}"] += 1
        if getattr(p, "src", None) and p.src.version == 6:
            extra[f"IPv6 packets by {who}"] += 1
    width = max([len(n) for n in count] + [6])
    print(f"# {'opcode':<{width}} " + " ".join(f"{s:>9}" for s in senders))
    for name in sorted(count, key=lambda n: [k for k, v in OPCODES.items()
                                              if v[0] == n] or [999]):
        print(f"# {name:<{width}} " +
              " ".join(f"{count[name][s]:>9}" for s in senders))
    for k in sorted(extra):
        print(f"# {k}: {extra[k]}")
    # Machine-readable, to compare with other dissectors (tshark).
    ops = collections.Counter(p.opcode for _, p in pkts
                              if hasattr(p, "opcode"))
    print("# opcode counts: " +
          " ".join(f"{op}:{ops[op]}" for op in sorted(ops)))

    out = []
    conns = list(connections(pkts))
    nbad = answered(conns, out, names)
    checked, wrong = message_lengths(conns, out)
    for line in out:
        print(f"# {line}")
    tap.result(nbad == 0, "every RC request was answered (ACK or response "
               f"up to its PSN; {nbad} connections not)")
    tap.result(wrong == 0, f"multi-packet WRITEs and READ responses carry "
               f"their DMA length ({checked} checked, {wrong} wrong)")
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
