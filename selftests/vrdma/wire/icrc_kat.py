#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Known-answer test of the RoCEv2 ICRC (drivers/vrdma/icrc.c).

The ICRC is the Ethernet CRC-32 over 8 bytes of 0xff (the masked LRH of
InfiniBand), the IP header with TOS/TTL/checksum (IPv4) or traffic class,
flow label and hop limit (IPv6) set to 1s, the UDP header with its checksum
set to 1s, the BTH with its resv8a byte (FECN/BECN) set to 1s, and the rest
of the packet up to the end of the pad.  It travels after the pad, least
significant byte first.

This is an implementation of that definition independent of the kernel's.
Run without arguments it checks packets captured from rdma_rxe (embedded
below); given pcap files it checks every RoCEv2 packet in them (UDP port
4791; Ethernet, Linux "any" SLL/SLL2 or raw IP captures).  Output is TAP;
the exit status is 0 only if every ICRC matched.

    icrc_kat.py                  # the embedded vectors
    icrc_kat.py a.pcap b.pcap    # every RoCEv2 packet in the captures
"""

import struct
import sys
import zlib

ROCE_PORT = 4791


def icrc(datagram):
    """The ICRC of an IP datagram without its last 4 bytes (the ICRC)."""
    b = bytearray(datagram)
    version = b[0] >> 4
    if version == 4:
        ip_len = (b[0] & 0x0F) * 4
        b[1] = 0xFF                     # TOS
        b[8] = 0xFF                     # TTL
        b[10:12] = b"\xff\xff"          # header checksum
    elif version == 6:
        ip_len = 40
        if b[6] != 17:
            raise ValueError("IPv6 extension headers are not allowed")
        b[0] |= 0x0F                    # traffic class, high nibble
        b[1:4] = b"\xff\xff\xff"        # traffic class, flow label
        b[7] = 0xFF                     # hop limit
    else:
        raise ValueError("not IP")
    b[ip_len + 6:ip_len + 8] = b"\xff\xff"      # UDP checksum
    b[ip_len + 8 + 4] = 0xFF                     # BTH resv8a
    # zlib.crc32 starts from ~0 and complements its result: exactly the
    # Ethernet CRC the ICRC is, with the LRH stand-in in front.
    return zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xFFFFFFFF


def with_icrc(datagram):
    """Append the ICRC to an IP datagram built without it."""
    return datagram + struct.pack("<I", icrc(datagram))


def roce_datagram(datagram):
    """The RoCEv2 part of an IP datagram: (ip header length, opcode), or
    None if it is not UDP to port 4791."""
    version = datagram[0] >> 4
    if version == 4:
        ip_len = (datagram[0] & 0x0F) * 4
        proto = datagram[9]
    elif version == 6:
        ip_len = 40
        proto = datagram[6]
    else:
        return None
    if proto != 17 or len(datagram) < ip_len + 8 + 12 + 4:
        return None
    dport = struct.unpack_from(">H", datagram, ip_len + 2)[0]
    if dport != ROCE_PORT:
        return None
    return ip_len, datagram[ip_len + 8]


def ip_datagram(frame, linktype):
    """The IP datagram in a captured frame, trimmed to its IP length."""
    if linktype == 1:                   # Ethernet
        off = 12
        ethertype = struct.unpack_from(">H", frame, off)[0]
        off += 2
        while ethertype in (0x8100, 0x88A8):
            ethertype = struct.unpack_from(">H", frame, off + 2)[0]
            off += 4
    elif linktype == 113:               # Linux cooked (SLL)
        ethertype = struct.unpack_from(">H", frame, 14)[0]
        off = 16
    elif linktype == 276:               # Linux cooked v2 (SLL2)
        ethertype = struct.unpack_from(">H", frame, 0)[0]
        off = 20
    elif linktype in (12, 101):         # raw IP
        ethertype = 0x0800 if frame[0] >> 4 == 4 else 0x86DD
        off = 0
    else:
        raise ValueError(f"link type {linktype} not supported")
    dgram = frame[off:]
    if ethertype == 0x0800 and len(dgram) >= 20:
        return dgram[:struct.unpack_from(">H", dgram, 2)[0]]
    if ethertype == 0x86DD and len(dgram) >= 40:
        return dgram[:40 + struct.unpack_from(">H", dgram, 4)[0]]
    return None


def read_pcap(path):
    """Yield (timestamp, frame, linktype) from a classic pcap file."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        raise ValueError(f"{path}: not a pcap file (pcapng is not read)")
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    snaplen, linktype = struct.unpack_from(e + "II", data, 16)
    linktype &= 0x0FFFFFFF
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack_from(e + "IIII", data, off)
        frame = data[off + 16:off + 16 + incl]
        off += 16 + incl
        if incl < orig:
            raise ValueError(f"{path}: truncated frame (snaplen {snaplen})")
        yield sec + frac / (1e9 if nano else 1e6), frame, linktype


def pcap_packets(path):
    """Yield the IP datagrams of a classic pcap file."""
    for _, frame, linktype in read_pcap(path):
        dgram = ip_datagram(frame, linktype)
        if dgram is not None:
            yield dgram


# Packets sent by rdma_rxe (Linux 6.1), captured with tcpdump on the link
# between two VMs running ibv_rc_pingpong, ibv_ud_pingpong and perftest over
# rdma_rxe; IP header to ICRC.
VECTORS = [
    ("rxe IPv4 RC_SEND_ONLY",
     "45000094111e4000401115270a0900020a090001c12112b7008000000430ffff"
     "0000001180c5d3b17b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b"
     "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b"
     "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b"
     "7b7b7b7b7b7b7b7b7b7b7b7b7b000000c245ec38"),
    ("rxe IPv4 RC_RDMA_WRITE_LAST",
     "450001f4159b400040110f4a0a0900020a090001c19012b701e000000830ffff"
     "0000001480ff6ae66a6ab5e27f9129897b196d8c188f3d8af797e29ecc90e295"
     "99eea201e85c5752c70c34469e5ecf19773ca68fcbe319c37afb61468c43db25"
     "317d2619da7d6ca18aa0e728feb64175f2e705beca1e81441ae28aa62565cb56"
     "e3f270bd6fdc5ef97c45217bfb63f0ed4af5ab15142c592e0ee4d433499f8a2c"
     "91fae901d647fa528c1ccd877fbe75c9b320dec74d38f55b1cc98f65691992fa"
     "137bfbe9c3f63b4f1209d791c74c5a7a6c3942b97137158d01a4f26abd8464d0"
     "0060b9c356f41268fde9f9c435533fa28c815bfdb8708ab9147d23d10188a101"
     "e85ac43e4fd7a64cc09f11f6f250987fd1f37c896407437884664a85eeeb87d6"
     "464b149522bae1e359f2d94c4271cb1364479dc84ee041d2468b583576df0bbc"
     "2a20514dda333034250980687a4b7bde9218a7e1f8e8b33f730b74e9ea7fa615"
     "9ff7627a2a92ae509b2eb8157933f30b4c9aec4482a083f5abf7df967785ab16"
     "7c0d90a79f3ef73a6caf4fe5e242f12edddd735f7df65529ee34bf65b96a7b35"
     "770cdc164ad350b7829f9c65e18d93be6b061ee8fd7311eba7d050603acb95b1"
     "d772c7224517d9c8b6752d9803c0566ec77456c4e768af8e38ffee73ca8424a2"
     "f6ecc43b039d03ba12305215f1000000e7687760"),
    ("rxe IPv4 RC_RDMA_READ_REQUEST",
     "4500003c17b0400040110eed0a0900020a090001c1b912b7002800000c00ffff"
     "00000015805c8b320000559c1309700000000667000009c538482740"),
    ("rxe IPv4 RC_RDMA_READ_RESPONSE_LAST",
     "450001f8696f40004011bb710a0900010a090002c1b912b701e400000f30ffff"
     "00000015005c8b341f0000014e6a6fa0ef04a902560ea54dec98abfc1aaca939"
     "244d59de80effc59936d52e1d7c182c6c52bc81c396e692506142220c1cb59e5"
     "18b3c399a2bff2352c4417040599cacac493e6fd014f23076445272510810a28"
     "34cdc1d68db30cb9f723bdfcbc88c7801bad7d1cfda02361e54a86f5cb901eff"
     "5ddfd6ea93e2a48a056187c1e94e4104fbbe20f85f4359448edf3a596f5859cd"
     "372fb7ca115b5516bddcd7a62a18ab25d6cb1e350f777a9d57b4f6c60c4f9343"
     "7e4b0e8fa663a5633f7c0a6994b58e6b80aca08f241a2c7bce2341da72d51ef1"
     "202c80c68f262acea2343737e9c5a2697242f9965d25112b485206bb2724ac47"
     "502c0edf5238adf56ce42c55a9cebe1b10b7b16dddc29925159fe03cc38c8413"
     "b992f20bca9f0036832c8b2cfa49480b01f978debc1103d1b0e40d7370918629"
     "237835ed1735239a62aec75cf80f67f908e0d7c4f1da95a2bea3152f349c5858"
     "148d452cc369c625178d810f9ce908a5c9df69babaff5c78a272a7d60e002e22"
     "8d744e50dd1575f4a2f7043fe00ce4a9ec4d63a64cc01eee32c6c540c6f36253"
     "67b1a444c6193968103da7f0498b9935d9fddb25bdfa14efc0d92f86cc91d934"
     "427d780897b171a7ee189838a4316d7d2e000000606ce2d4"),
    ("rxe IPv4 RC_ACKNOWLEDGE",
     "4500003011204000401115890a0900020a090001c12112b7001c00001100ffff"
     "00000011004704b91f000001409dfa56"),
    ("rxe IPv4 RC_ATOMIC_ACKNOWLEDGE",
     "450000386bcd40004011bad30a0900010a090002c21112b7002400001200ffff"
     "00000017006733211f00000131aecae571877d11d5903236"),
    ("rxe IPv4 RC_FETCH_ADD",
     "450000481c56400040110a3b0a0900020a090001c21112b7003400001400ffff"
     "0000001780673321000055ad38f1500000000856000000000000000100000000"
     "00000000f72b8d3d"),
    ("rxe IPv4 UD_SEND_ONLY",
     "4500007014584000401112110a0900020a090001d07812b7005c00006430ffff"
     "0000001300bd17b311111111000000137b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b"
     "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b"
     "7b7b7b7b7b7b7b7b7b000000d2166247"),
    ("rxe IPv6 RC_SEND_LAST",
     "6000000001e01140fd090000000000000000000000000002fd09000000000000"
     "0000000000000001c34912b701e000000220ffff0000001d80fcf2a8c881f6e5"
     "303fd796bceab4bb7c25ff453da6ca84c80bed80d4dc5a14316b0af9ec00de1d"
     "3fb5b3fca068b71c8db761ca5d2b4f26373ca60b18001f496b2942582a207569"
     "d5286575901d911dd4f2e8311e37575573fd608bfe7fd469a916c1d336363c0b"
     "5fa281efbf120d9305f5c4232c1c789f19d82a1757fe81001442d34a791055d8"
     "b2d6c771e9d404eec9c811f5e48994fe61be15b8bc96b9d0d98c1a529c702a4e"
     "46f1bf2fc6c31d8f8c2e8570b7196e18d884d1941a8a65f3167f45b3ef6f0136"
     "61c165278483b610b13b816955ef812d7352c18edc2681f3a6c7a69536a7cb97"
     "6831beedb475fd65b07ece056e5032e1a2f46f7f1af172c0b81856eebf218628"
     "52441506b9126c6a913a6fff8aa2e02d9650acb0411e71f936c7e7f5e86d1d3b"
     "b232416b45add5d6e845d572e7b59f7d054b2d46699e3f9f6527954e94b28946"
     "e5cab22a78870060ccd5d2b38a723090bd5ed627fc16c6623d5bb0d10e3918f3"
     "03ca1d7b511ddb1ef2aed17c20020cdd60e3045cf9cbbe36266e0734a71f27ab"
     "e944263b61025953b02ad0d02cdcad8cbfb2e9b87da7eea316f6d8bd15ff68ff"
     "448f3aa59193f941bdc911eaa5be7665705f1ded070c911d0269da17684316ac"
     "d25000006eed67a0"),
    ("rxe IPv6 RC_SEND_ONLY",
     "6000000000801140fd090000000000000000000000000002fd09000000000000"
     "0000000000000001c24012b7008000000430ffff000000188081a3467b7b7b7b"
     "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b"
     "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b"
     "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b"
     "7b000000dfa7e62f"),
    ("rxe IPv6 RC_RDMA_READ_REQUEST",
     "6000000000281140fd090000000000000000000000000002fd09000000000000"
     "0000000000000001c31012b7002800000c00ffff0000001c80364dcf0000561e"
     "4eb7000000000dbe000009c535511c2e"),
    ("rxe IPv6 RC_ACKNOWLEDGE",
     "60000000001c1140fd090000000000000000000000000001fd09000000000000"
     "0000000000000002c24012b7001c00001100ffff000000180081a3461f000001"
     "d8f4003f"),
    ("rxe IPv6 RC_ATOMIC_ACKNOWLEDGE",
     "6000000000241140fd090000000000000000000000000001fd09000000000000"
     "0000000000000002c38412b7002400001200ffff0000001e00b27c581f000001"
     "d67572759763055639cfab5b"),
    ("rxe IPv6 RC_FETCH_ADD",
     "6000000000341140fd090000000000000000000000000002fd09000000000000"
     "0000000000000001c38412b7003400001400ffff0000001e80b27c58000055ef"
     "1e0a300000000f240000000000000001000000000000000084a6db52"),
    ("rxe IPv6 UD_SEND_ONLY",
     "60000000005c1140fd090000000000000000000000000002fd09000000000000"
     "0000000000000001fb9712b7005c00006430ffff0000001a0079802911111111"
     "0000001a7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b"
     "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b000000"
     "090daea6"),
]


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0
        print("TAP version 13")

    def result(self, ok, desc):
        self.n += 1
        if not ok:
            self.failed += 1
        print(f"{'ok' if ok else 'not ok'} {self.n} {desc}")

    def finish(self):
        print(f"1..{self.n}")
        print(f"# {self.n - self.failed} passed, {self.failed} failed")
        return 0 if self.failed == 0 and self.n > 0 else 1


def check(tap, name, dgram):
    info = roce_datagram(dgram)
    if info is None:
        return False
    ip_len, opcode = info
    wire = struct.unpack("<I", dgram[-4:])[0]
    calc = icrc(dgram[:-4])
    desc = (f"{name}: IPv{dgram[0] >> 4} opcode 0x{opcode:02x}, "
            f"{len(dgram)} bytes, ICRC 0x{wire:08x}")
    if calc != wire:
        desc += f" (computed 0x{calc:08x})"
    tap.result(calc == wire, desc)
    return True


def main(argv):
    tap = Tap()
    # The seed icrc.c starts crc32_le() from: the CRC of the LRH stand-in.
    seed = ~zlib.crc32(b"\xff" * 8) & 0xFFFFFFFF
    tap.result(seed == 0xDEBB20E3, f"LRH seed 0x{seed:08x}")
    if len(argv) > 1:
        for path in argv[1:]:
            count = 0
            for i, dgram in enumerate(pcap_packets(path)):
                count += check(tap, f"{path} #{i + 1}", dgram)
            tap.result(count > 0, f"{path}: {count} RoCEv2 packets")
    else:
        for name, hexdata in VECTORS:
            dgram = bytes.fromhex(hexdata)
            tap.result(check(tap, name, dgram), f"{name} is RoCEv2")
            # A bit flipped in the payload must change the ICRC, and one in
            # a masked field must not.
            bad = bytearray(dgram)
            bad[-5] ^= 1
            tap.result(icrc(bytes(bad[:-4])) != icrc(dgram[:-4]),
                       f"{name}: a flipped bit is detected")
            mut = bytearray(dgram)
            if mut[0] >> 4 == 4:
                mut[8] = (mut[8] - 1) & 0xFF      # a router's TTL decrement
            else:
                mut[7] = (mut[7] - 1) & 0xFF
            tap.result(icrc(bytes(mut[:-4])) == icrc(dgram[:-4]),
                       f"{name}: TTL/hop limit are masked")
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
