// SPDX-License-Identifier: GPL-2.0
/*
 * MRs on dma-bufs: ibv_reg_dmabuf_mr().
 *
 * The exporters are software ones the stock kernels have: vgem (a DRM
 * driver of shmem-backed GEM buffers, exported through PRIME; Linux 6.1
 * and 6.12) and udmabuf (a dma-buf of a sealed memfd's pages; 6.12; the
 * udmabuf of 6.1, which the debug kernel has, offers no CPU mapping and
 * is refused with EOPNOTSUPP).  The
 * test reads and writes the buffers through their own CPU mappings: the
 * dma-buf's mmap for vgem, the memfd's for udmabuf.
 *
 * The API (fixture dmabuf, one device): MRs over the whole buffer and at
 * offsets inside it; refused: zero length, a range past the buffer's end,
 * an fd that is closed or not a dma-buf, ON_DEMAND, an I/O address at
 * another offset within a page than the buffer offset, write rights to a
 * buffer exported read-only (read rights taken), and through rereg a new
 * translation and write rights to a read-only buffer (a new PD and new
 * rights taken).  The MR holds the buffer: with its
 * fd closed and the mapping gone it still moves data.
 *
 * RDMA (fixture dmabuf_rc, variants loopback and two_devices as in
 * rc_test.c): RDMA WRITE into B's dma-buf MR and READ from it, SEND
 * received into it and gathered from it, CAS and FAA on one of its words,
 * every byte of the buffer checked, and a WRITE past the MR's end
 * refused with the buffer untouched.  The same once over udmabuf.
 *
 * Runs as root in the test VM; main() (rc_suite.h) sets up the module, a
 * veth pair and the two RDMA devices.  rdma_rxe has no dma-buf MRs: with
 * VRDMA_TEST_TYPE=rxe the tests skip where it refuses them.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <linux/dma-buf.h>
#include <linux/udmabuf.h>
#include <rdma/ib_user_verbs.h>
#include <infiniband/verbs.h>

#include "rc_lib.h"
#include "rc_suite.h"

/*
 * The few DRM ioctls the test needs (include/uapi/drm/drm.h and
 * drm_mode.h; no Debian package this project installs ships them).
 */
struct t_drm_version {
	int major, minor, patchlevel;
	size_t name_len;
	char *name;
	size_t date_len;
	char *date;
	size_t desc_len;
	char *desc;
};

struct t_drm_create_dumb {
	uint32_t height, width, bpp, flags;
	uint32_t handle, pitch;
	uint64_t size;
};

struct t_drm_prime_handle {
	uint32_t handle, flags;
	int32_t fd;
};

struct t_drm_gem_close {
	uint32_t handle, pad;
};

#define T_DRM_IOCTL_VERSION		_IOWR('d', 0x00, struct t_drm_version)
#define T_DRM_IOCTL_GEM_CLOSE		_IOW('d', 0x09, struct t_drm_gem_close)
#define T_DRM_IOCTL_PRIME_HANDLE_TO_FD	_IOWR('d', 0x2d, \
					      struct t_drm_prime_handle)
#define T_DRM_IOCTL_MODE_CREATE_DUMB	_IOWR('d', 0xb2, \
					      struct t_drm_create_dumb)

enum exporter { EXP_VGEM, EXP_UDMABUF };

/* A dma-buf and a CPU mapping of its bytes. */
struct xbuf {
	int fd;			/* the dma-buf */
	uint8_t *p;		/* its bytes, to read and write */
	size_t len;
	int memfd;		/* udmabuf: the memfd behind it */
};

/* vgem's card node, loading the module on first use; -1 if none. */
static int vgem_open(void)
{
	static int loaded;
	char path[32], name[16];
	int i, fd;

	if (!loaded++)
		rc_sh("modprobe vgem 2>/dev/null");
	for (i = 0; i < 16; i++) {
		struct t_drm_version v = {
			.name_len = sizeof(name) - 1, .name = name,
		};

		snprintf(path, sizeof(path), "/dev/dri/card%d", i);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		memset(name, 0, sizeof(name));
		if (!ioctl(fd, T_DRM_IOCTL_VERSION, &v) &&
		    !strcmp(name, "vgem"))
			return fd;
		close(fd);
	}
	return -1;
}

/*
 * A buffer of @len bytes (a multiple of the page size) from @exp; @rdwr 0
 * exports it read-only (vgem).  Returns 0, or -1 when this kernel has no
 * such exporter.
 */
static int xbuf_alloc(struct __test_metadata *_metadata, struct xbuf *b,
		      enum exporter exp, size_t len, int rdwr)
{
	memset(b, 0, sizeof(*b));
	b->fd = b->memfd = -1;
	b->len = len;
	if (exp == EXP_VGEM) {
		struct t_drm_create_dumb c = {
			.height = len / 4096, .width = 1024, .bpp = 32,
		};
		struct t_drm_prime_handle h = { .flags = O_CLOEXEC };
		int card = vgem_open();

		if (card < 0)
			return -1;
		ASSERT_EQ(0, ioctl(card, T_DRM_IOCTL_MODE_CREATE_DUMB, &c)) {
			TH_LOG("vgem CREATE_DUMB: %s", strerror(errno));
		}
		ASSERT_LE(len, c.size);
		h.handle = c.handle;
		if (rdwr)
			h.flags |= O_RDWR;
		ASSERT_EQ(0, ioctl(card, T_DRM_IOCTL_PRIME_HANDLE_TO_FD, &h));
		b->fd = h.fd;
		/* The dma-buf holds the object; the handle and card may go. */
		ioctl(card, T_DRM_IOCTL_GEM_CLOSE,
		      &(struct t_drm_gem_close){ .handle = c.handle });
		close(card);
		b->p = mmap(NULL, len, PROT_READ | (rdwr ? PROT_WRITE : 0),
			    MAP_SHARED, b->fd, 0);
	} else {
		struct udmabuf_create c = { .flags = UDMABUF_FLAGS_CLOEXEC };
		int dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);

		if (dev < 0)
			return -1;
		b->memfd = memfd_create("dmabuf_test", MFD_ALLOW_SEALING);
		ASSERT_LE(0, b->memfd);
		ASSERT_EQ(0, ftruncate(b->memfd, len));
		ASSERT_EQ(0, fcntl(b->memfd, F_ADD_SEALS, F_SEAL_SHRINK));
		c.memfd = b->memfd;
		c.size = len;
		b->fd = ioctl(dev, UDMABUF_CREATE, &c);
		close(dev);
		ASSERT_LE(0, b->fd) {
			TH_LOG("UDMABUF_CREATE: %s", strerror(errno));
		}
		b->p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			    b->memfd, 0);
	}
	ASSERT_NE(MAP_FAILED, b->p) {
		TH_LOG("mapping the buffer: %s", strerror(errno));
	}
	return 0;
}

static void xbuf_free(struct xbuf *b)
{
	if (b->p && b->p != MAP_FAILED)
		munmap(b->p, b->len);
	if (b->fd >= 0)
		close(b->fd);
	if (b->memfd >= 0)
		close(b->memfd);
	memset(b, 0, sizeof(*b));
	b->fd = b->memfd = -1;
}

/* Bracket CPU access to a dma-buf as its API asks (no-ops for memfds). */
static void xbuf_sync(struct xbuf *b, int end)
{
	struct dma_buf_sync s = {
		.flags = DMA_BUF_SYNC_RW |
			 (end ? DMA_BUF_SYNC_END : DMA_BUF_SYNC_START),
	};

	if (b->memfd < 0)
		ioctl(b->fd, DMA_BUF_IOCTL_SYNC, &s);
}

#define XLEN		(64 * 1024)
#define MR_OFF		(4096 + 256)	/* the MRs' first byte in the buffer */
#define MR_LEN		(40000)
#define ALL_RIGHTS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

#define XBUF_OR_SKIP(b, exp, len, rdwr) do {				\
	if (xbuf_alloc(_metadata, (b), (exp), (len), (rdwr)))		\
		SKIP(return, "no %s in this kernel",			\
		     (exp) == EXP_VGEM ? "vgem" : "udmabuf");		\
} while (0)

/* ibv_reg_dmabuf_mr, skipping where rdma_rxe refuses it outright. */
#define REG_OR_SKIP(mr, pd, off, len, iova, fd, acc) do {		\
	(mr) = ibv_reg_dmabuf_mr((pd), (off), (len), (iova), (fd), (acc)); \
	if (!(mr) && errno == EOPNOTSUPP)				\
		RC_SKIP_ON_RXE(return, "no dma-buf MRs");		\
	ASSERT_NE(NULL, (mr)) {						\
		TH_LOG("ibv_reg_dmabuf_mr: %s", strerror(errno));	\
	}								\
} while (0)

/* ---- the API ------------------------------------------------------------ */

FIXTURE(dmabuf) {
	struct rc_dev d;
	struct xbuf b;
};

FIXTURE_SETUP(dmabuf)
{
	rc_dev_open(_metadata, &self->d, 0);
	self->b.fd = self->b.memfd = -1;
}

FIXTURE_TEARDOWN(dmabuf)
{
	xbuf_free(&self->b);
	rc_dev_close(&self->d);
}

/* Whole, at an offset, a single byte; what is refused, and why. */
TEST_F(dmabuf, reg)
{
	struct ibv_pd *pd = self->d.pd;
	struct ibv_mr *mr;
	int fd, file;

	XBUF_OR_SKIP(&self->b, EXP_VGEM, XLEN, 1);
	fd = self->b.fd;
	REG_OR_SKIP(mr, pd, 0, XLEN, 0, fd, ALL_RIGHTS);
	EXPECT_EQ(XLEN, mr->length);
	EXPECT_NE(0, mr->lkey);
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	mr = ibv_reg_dmabuf_mr(pd, MR_OFF, MR_LEN, 0x7000 + MR_OFF % 4096, fd,
			       ALL_RIGHTS);
	ASSERT_NE(NULL, mr) {
		TH_LOG("at an offset: %s", strerror(errno));
	}
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	mr = ibv_reg_dmabuf_mr(pd, XLEN - 1, 1, XLEN - 1, fd,
			       IBV_ACCESS_LOCAL_WRITE);
	ASSERT_NE(NULL, mr);
	EXPECT_EQ(0, ibv_dereg_mr(mr));

	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(pd, 0, 0, 0, fd, ALL_RIGHTS));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(pd, 4096, XLEN, 4096, fd,
					  ALL_RIGHTS));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(pd, 0, XLEN + 1, 0, fd,
					  ALL_RIGHTS));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(pd, UINT64_MAX - 4095, 8192,
					  0, fd, ALL_RIGHTS));
	EXPECT_NE(0, errno);
	/* The I/O address at another offset within its page. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(pd, 0, 4096, 8, fd, ALL_RIGHTS));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(pd, 0, 4096, 0, fd,
					  ALL_RIGHTS | IBV_ACCESS_ON_DEMAND));
	EXPECT_NE(0, errno);
	/* A closed fd, and an fd that is no dma-buf. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(pd, 0, 4096, 0, 1000, ALL_RIGHTS));
	EXPECT_EQ(EBADF, errno);
	file = open("/proc/self/status", O_RDONLY);
	ASSERT_LE(0, file);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(pd, 0, 4096, 0, file, ALL_RIGHTS));
	EXPECT_EQ(EINVAL, errno);
	close(file);
}

/*
 * REREG_MR through the write() ABI, which reaches the kernel with what
 * libibverbs' ibv_rereg_mr() refuses itself for a dma-buf MR.  Returns 0
 * or the errno.
 */
static int raw_rereg(struct ibv_mr *mr, uint32_t flags, struct ibv_pd *pd,
		     int access, void *start, size_t len)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_rereg_mr cmd;
	} req;
	struct ib_uverbs_rereg_mr_resp resp;

	memset(&req, 0, sizeof(req));
	req.hdr.command = IB_USER_VERBS_CMD_REREG_MR;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.mr_handle = mr->handle;
	req.cmd.flags = flags;
	req.cmd.start = (uintptr_t)start;
	req.cmd.length = len;
	req.cmd.hca_va = (uintptr_t)start;
	req.cmd.pd_handle = pd ? pd->handle : 0;
	req.cmd.access_flags = access;
	if (write(mr->context->cmd_fd, &req, sizeof(req)) == sizeof(req))
		return 0;
	return errno;
}

/* A buffer exported read-only: read rights only, also through rereg. */
TEST_F(dmabuf, read_only)
{
	struct ibv_mr *mr;

	XBUF_OR_SKIP(&self->b, EXP_VGEM, XLEN, 0);
	errno = 0;
	mr = ibv_reg_dmabuf_mr(self->d.pd, 0, XLEN, 0, self->b.fd,
			       IBV_ACCESS_LOCAL_WRITE);
	if (!mr && errno == EOPNOTSUPP)
		RC_SKIP_ON_RXE(return, "no dma-buf MRs");
	EXPECT_EQ(NULL, mr);
	EXPECT_EQ(EACCES, errno);
	REG_OR_SKIP(mr, self->d.pd, 0, XLEN, 0, self->b.fd,
		    IBV_ACCESS_REMOTE_READ);
	EXPECT_EQ(EACCES, raw_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				    IBV_ACCESS_LOCAL_WRITE, NULL, 0));
	EXPECT_EQ(0, raw_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
			       IBV_ACCESS_REMOTE_READ, NULL, 0));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
}

/*
 * rereg: libibverbs refuses it for any dma-buf MR; the kernel, asked
 * directly, changes the PD and the rights in place, never the translation.
 */
TEST_F(dmabuf, rereg)
{
	static uint8_t other[4096] __attribute__((aligned(4096)));
	struct ibv_pd *pd2;
	struct ibv_mr *mr;

	XBUF_OR_SKIP(&self->b, EXP_VGEM, XLEN, 1);
	REG_OR_SKIP(mr, self->d.pd, 0, XLEN, 0, self->b.fd, ALL_RIGHTS);
	pd2 = ibv_alloc_pd(self->d.ctx);
	ASSERT_NE(NULL, pd2);
	EXPECT_NE(0, ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL,
				  0, IBV_ACCESS_REMOTE_READ));
	EXPECT_EQ(0, raw_rereg(mr, IBV_REREG_MR_CHANGE_PD, pd2, 0, NULL, 0));
	EXPECT_EQ(0, raw_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
			       IBV_ACCESS_REMOTE_READ, NULL, 0));
	EXPECT_EQ(EOPNOTSUPP, raw_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION,
					NULL, 0, other, sizeof(other)));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	EXPECT_EQ(0, ibv_dealloc_pd(pd2));
}

/* ---- RDMA with dma-buf MRs ---------------------------------------------- */

#define BUF_LEN		(64 * 1024)

FIXTURE(dmabuf_rc) {
	struct rc_dev d0, d1;
	struct rc_dev *da, *db;
	struct rc_env e;
	struct xbuf b;		/* B's buffer */
	struct ibv_mr *mr;	/* B's MR on it: bytes MR_OFF.. at MR_OFF */
	uint8_t *img;		/* what the buffer should hold */
};

RC_ENDS_VARIANTS(dmabuf_rc);

FIXTURE_SETUP(dmabuf_rc)
{
	struct rc_opts o = { .access = ALL_RIGHTS };

	memset(&self->e, 0, sizeof(self->e));
	self->b.fd = self->b.memfd = -1;
	rc_ends_open(_metadata, &self->d0, &self->d1, &self->da, &self->db,
		     variant->two_devices);
	rc_env_create(_metadata, &self->e, self->da, self->db, &o, BUF_LEN,
		      RC_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC,
		      RC_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC);
	self->img = malloc(XLEN);
	ASSERT_NE(NULL, self->img);
}

FIXTURE_TEARDOWN(dmabuf_rc)
{
	if (self->mr)
		ibv_dereg_mr(self->mr);
	xbuf_free(&self->b);
	free(self->img);
	rc_env_destroy(&self->e);
	rc_dev_close(&self->d1);
	rc_dev_close(&self->d0);
}

/* B's buffer from @exp, filled with a background, and B's MR on it. */
static int rc_buf(struct __test_metadata *_metadata,
		  FIXTURE_DATA(dmabuf_rc) *self, enum exporter exp)
{
	if (xbuf_alloc(_metadata, &self->b, exp, XLEN, 1))
		return -1;
	rc_fill(self->img, XLEN, 0xb, 0);
	xbuf_sync(&self->b, 0);
	memcpy(self->b.p, self->img, XLEN);
	xbuf_sync(&self->b, 1);
	self->mr = ibv_reg_dmabuf_mr(self->db->pd, MR_OFF, MR_LEN, MR_OFF,
				     self->b.fd, ALL_RIGHTS);
	return self->mr ? 0 : -2;
}

#define RC_BUF_OR_SKIP(exp) do {					\
	int __r = rc_buf(_metadata, self, (exp));			\
									\
	if (__r == -1)							\
		SKIP(return, "no %s in this kernel",			\
		     (exp) == EXP_VGEM ? "vgem" : "udmabuf");		\
	if (__r == -2 && errno == EOPNOTSUPP && (exp) == EXP_UDMABUF &&	\
	    !rc_cfg.is_rxe)						\
		SKIP(return, "this kernel's udmabuf has no CPU mapping"); \
	if (__r == -2 && errno == EOPNOTSUPP)				\
		RC_SKIP_ON_RXE(return, "no dma-buf MRs");		\
	ASSERT_EQ(0, __r) {						\
		TH_LOG("ibv_reg_dmabuf_mr: %s", strerror(errno));	\
	}								\
} while (0)

/* The buffer holds exactly self->img. */
static void buf_check(struct __test_metadata *_metadata,
		      FIXTURE_DATA(dmabuf_rc) *self, const char *what)
{
	xbuf_sync(&self->b, 0);
	EXPECT_SAME_BYTES(self->b.p, self->img, XLEN, what);
	xbuf_sync(&self->b, 1);
}

/* WRITE into B's MR and READ back, at lengths that cross pages. */
static void write_read(struct __test_metadata *_metadata,
		       FIXTURE_DATA(dmabuf_rc) *self)
{
	static const uint32_t lens[] = { 1, 4096, 9001, MR_LEN - 17 };
	uint8_t *want = malloc(BUF_LEN);
	size_t i;

	ASSERT_NE(NULL, want);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		uint32_t len = lens[i];
		uint64_t raddr = MR_OFF + 17;
		struct ibv_sge s = {
			.addr = (uintptr_t)self->e.ba.p + 1, .length = len,
			.lkey = self->e.ba.mr->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = 0x100 + i, .sg_list = &s, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
		};
		char what[64];

		snprintf(what, sizeof(what), "WRITE %u bytes into a dma-buf",
			 len);
		rc_fill(self->e.ba.p + 1, len, 0x20 + i, 0);
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = self->mr->rkey;
		rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS,
		       IBV_WC_RDMA_WRITE, what);
		memcpy(self->img + raddr, self->e.ba.p + 1, len);
		buf_check(_metadata, self, what);

		snprintf(what, sizeof(what), "READ %u bytes of a dma-buf", len);
		rc_fill(self->img + raddr, len, 0x40 + i, 0);
		xbuf_sync(&self->b, 0);
		memcpy(self->b.p, self->img, XLEN);
		xbuf_sync(&self->b, 1);
		memset(self->e.ba.p, 0x33, BUF_LEN);
		memset(want, 0x33, BUF_LEN);
		memcpy(want + 1, self->img + raddr, len);
		wr.wr_id = 0x200 + i;
		wr.opcode = IBV_WR_RDMA_READ;
		rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
		       what);
		EXPECT_SAME_BYTES(self->e.ba.p, want, BUF_LEN, what);
	}
	free(want);
}

TEST_F(dmabuf_rc, write_read)
{
	RC_BUF_OR_SKIP(EXP_VGEM);
	write_read(_metadata, self);
}

TEST_F(dmabuf_rc, write_read_udmabuf)
{
	RC_BUF_OR_SKIP(EXP_UDMABUF);
	write_read(_metadata, self);
}

/*
 * SEND received into B's dma-buf MR (two SGEs: the MR, then B's ordinary
 * buffer), then B sends from it back to A.
 */
TEST_F(dmabuf_rc, send)
{
	const uint32_t len = 10000, off = MR_OFF + 4000;
	struct ibv_sge r[2] = {
		{ .addr = off, .length = len - 100, },
		{ .addr = (uintptr_t)self->e.bb.p, .length = 1000, },
	}, s = {
		.addr = (uintptr_t)self->e.ba.p, .length = len,
		.lkey = self->e.ba.mr->lkey,
	};
	struct ibv_recv_wr rwr = { .wr_id = 0x300, .sg_list = r, .num_sge = 2 };
	struct ibv_send_wr wr = {
		.wr_id = 0x301, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_SEND,
	};
	struct ibv_recv_wr *rbad = NULL;

	RC_BUF_OR_SKIP(EXP_VGEM);
	r[0].lkey = self->mr->lkey;
	r[1].lkey = self->e.bb.mr->lkey;
	rc_fill(self->e.ba.p, len, 0x55, 0);
	ASSERT_EQ(0, ibv_post_recv(self->e.p.b.qp, &rwr, &rbad));
	rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS, IBV_WC_SEND,
	       "SEND into a dma-buf");
	rc_expect_wc(_metadata, self->e.p.b.rcq, &(struct rc_wc_exp){
		.wr_id = 0x300, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV, .recv = 1, .byte_len = len,
		.qp_num = self->e.p.b.qp->qp_num,
	}, "SEND into a dma-buf");
	memcpy(self->img + off, self->e.ba.p, len - 100);
	buf_check(_metadata, self, "SEND into a dma-buf");
	EXPECT_SAME_BYTES(self->e.bb.p, self->e.ba.p + len - 100, 100,
			  "SEND's tail in B's buffer");

	/* Back: gathered from the dma-buf MR. */
	memset(self->e.ba.p, 0, BUF_LEN);
	ASSERT_EQ(0, rc_post_recv(&self->e.p.a, 0x302, &self->e.ba, 0,
				  BUF_LEN));
	s.addr = off;
	s.length = len - 100;
	s.lkey = self->mr->lkey;
	wr.wr_id = 0x303;
	rc_post_expect(_metadata, &self->e.p.b, &wr, IBV_WC_SUCCESS,
		       IBV_WC_SEND, "SEND from a dma-buf");
	rc_expect_wc(_metadata, self->e.p.a.rcq, &(struct rc_wc_exp){
		.wr_id = 0x302, .status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV, .recv = 1, .byte_len = len - 100,
		.qp_num = self->e.p.a.qp->qp_num,
	}, "SEND from a dma-buf");
	EXPECT_SAME_BYTES(self->e.ba.p, self->img + off, len - 100,
			  "SEND from a dma-buf");
}

/* CAS and FAA on a word of B's dma-buf MR. */
TEST_F(dmabuf_rc, atomics)
{
	const uint64_t w0 = 0x1122334455667788ULL, raddr = MR_OFF + 8 * 101;
	struct ibv_sge s = {
		.addr = (uintptr_t)self->e.ba.p, .length = 8,
		.lkey = self->e.ba.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0x400, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_ATOMIC_CMP_AND_SWP,
	};

	RC_BUF_OR_SKIP(EXP_VGEM);
	wr64(self->img + raddr, w0);
	xbuf_sync(&self->b, 0);
	memcpy(self->b.p, self->img, XLEN);
	xbuf_sync(&self->b, 1);
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = self->mr->rkey;
	wr.wr.atomic.compare_add = w0;
	wr.wr.atomic.swap = 0xdeadbeefcafef00dULL;
	rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP,
	       "CAS on a dma-buf");
	EXPECT_EQ(w0, rd64(self->e.ba.p));
	wr64(self->img + raddr, 0xdeadbeefcafef00dULL);
	buf_check(_metadata, self, "CAS on a dma-buf");

	wr.wr_id = 0x401;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = 3;
	rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD,
	       "FAA on a dma-buf");
	EXPECT_EQ(0xdeadbeefcafef00dULL, rd64(self->e.ba.p));
	wr64(self->img + raddr, 0xdeadbeefcafef010ULL);
	buf_check(_metadata, self, "FAA on a dma-buf");
}

/*
 * A WRITE that runs past the MR's end, into bytes the buffer has but the
 * MR does not cover, is refused and changes nothing; so is a READ.
 */
TEST_F(dmabuf_rc, beyond_mr)
{
	struct ibv_sge s = {
		.addr = (uintptr_t)self->e.ba.p, .length = 8,
		.lkey = self->e.ba.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0x500, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
	};

	RC_BUF_OR_SKIP(EXP_VGEM);
	rc_fill(self->e.ba.p, 8, 0x99, 0);
	wr.wr.rdma.remote_addr = MR_OFF + MR_LEN - 4;
	wr.wr.rdma.rkey = self->mr->rkey;
	rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_REM_ACCESS_ERR, 0,
	       "WRITE past the dma-buf MR");
	buf_check(_metadata, self, "WRITE past the dma-buf MR");
}

/* The MR holds the buffer: its fd and mapping gone, data still moves. */
TEST_F(dmabuf_rc, outlives_fd)
{
	const uint64_t raddr = MR_OFF + 64;
	struct ibv_sge s = {
		.addr = (uintptr_t)self->e.ba.p, .length = 4000,
		.lkey = self->e.ba.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 0x600, .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
	};

	RC_BUF_OR_SKIP(EXP_VGEM);
	munmap(self->b.p, self->b.len);
	self->b.p = NULL;
	close(self->b.fd);
	self->b.fd = -1;
	rc_fill(self->e.ba.p, 4000, 0x66, 0);
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = self->mr->rkey;
	rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE,
	       "WRITE into a dma-buf whose fd is closed");
	memset(self->e.ba.p, 0, 4000);
	wr.wr_id = 0x601;
	wr.opcode = IBV_WR_RDMA_READ;
	rc_post_expect(_metadata, &self->e.p.a, &wr, IBV_WC_SUCCESS, IBV_WC_RDMA_READ,
	       "READ it back");
	rc_fill(self->img, 4000, 0x66, 0);
	EXPECT_SAME_BYTES(self->e.ba.p, self->img, 4000, "READ it back");
}

int main(int argc, char **argv)
{
	return rc_suite_main(argc, argv);
}
