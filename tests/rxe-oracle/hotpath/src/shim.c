/* rxe hot-path shim: emulates the kernel side of /dev/infiniband/uverbs0 for an rxe (Soft-RoCE)
 * device, so that Debian's libibverbs + librxe (rdma-core 44) run without a kernel driver.
 * LD_PRELOAD it with SYSFS_PATH pointing at the tree mkfakesys.sh builds.
 *
 * - open() of the uverbs node opens /dev/null instead (the "fake fd"); ioctl() on it answers
 *   ENOTTY, so libibverbs falls back to the legacy write() commands, answered here.
 * - CREATE_CQ / CREATE_QP allocate the rings as the kernel's rxe does (slots = the request + 1
 *   rounded up to a power of two, elements rounded up to a power of two, a struct rxe_queue_buf
 *   header with log2_elem_size and index_mask) in anonymous shared memory, and answer a
 *   struct mminfo (offset cookie, page-aligned size); mmap() of the fake fd at that offset
 *   returns that memory. shim_state() gives the harness (which plays the kernel) the rings.
 * - write() of POST_SEND on the fake fd (librxe's doorbell) returns the byte count at once:
 *   the hot path's only system call is replaced by a function call.
 * Structure after tests/mlx5-oracle/crypto/src/shim.c. Own code, written from the uAPI headers
 * (rdma/ib_user_verbs.h, rdma/rdma_user_rxe.h); no rdma-core code. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_rxe.h>
#include "shim.h"

static struct shim_state S = { .fake_fd = -1 };
struct shim_state *shim_state(void) { return &S; }
static uint32_t next_handle = 1;
static uint64_t next_mmap_offset; /* the kernel's rxe->mmap_offset: starts at 0 */
#define SHIM_LOG_DEFAULT "/tmp/rxe-hotpath-shim.log"
#define SHIM_FAKE_NAME "uverbs0"
/* shim_log, open / stat / close of the uverbs node */
#include "../../../support/oracle/fake_uverbs.h"


/* ---------- ioctl: no ioctl framework, so libibverbs uses write() ---------- */
int ioctl(int fd, unsigned long req, ...)
{
	va_list ap; va_start(ap, req); void *arg = va_arg(ap, void *); va_end(ap);
	if (fd >= 0 && fd == S.fake_fd) {
		shim_log("ioctl(fake, 0x%lx) -> ENOTTY\n", req);
		errno = ENOTTY; return -1;
	}
	return syscall(SYS_ioctl, fd, req, arg);
}

/* ---------- rings ---------- */
static uint32_t pow2_at_least(uint32_t v) { uint32_t n = 1; while (n < v) n <<= 1; return n; }
static uint32_t log2_of(uint32_t v) { uint32_t l = 0; while ((1u << l) < v) l++; return l; }

/* rxe_queue_init, as the kernel does it: nelem + 1 slots rounded up to a power of two (one
 * always stays empty), elements rounded up to a power of two; *granted = slots - 1. */
static struct shim_ring *new_ring(const char *what, uint32_t nelem, uint32_t elem_size, uint32_t *granted)
{
	if (S.nring >= (int)(sizeof S.ring / sizeof S.ring[0])) return NULL;
	long pg = sysconf(_SC_PAGESIZE);
	uint32_t slots = pow2_at_least(nelem + 1), log2 = log2_of(elem_size);
	size_t size = sizeof(struct rxe_queue_buf) + ((size_t)slots << log2);
	size = (size + pg - 1) & ~(size_t)(pg - 1);
	void *p = (void *)syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) return NULL;
	struct rxe_queue_buf *q = p;
	q->log2_elem_size = log2; q->index_mask = slots - 1; q->producer_index = 0; q->consumer_index = 0;
	struct shim_ring *r = &S.ring[S.nring++];
	*r = (struct shim_ring){ .buf = p, .size = size, .offset = next_mmap_offset, .log2_elem = log2, .slots = slots };
	snprintf(r->what, sizeof r->what, "%s", what);
	next_mmap_offset += size;
	*granted = slots - 1;
	shim_log("  ring %s: %u slots x %u B at %p, mminfo offset 0x%llx size %zu\n", what, slots, 1u << log2, p,
		 (unsigned long long)r->offset, size);
	return r;
}
static void put_mminfo(uint8_t *at, const struct shim_ring *r)
{
	struct mminfo mi = { .offset = r->offset, .size = (uint32_t)r->size, .pad = 0 };
	memcpy(at, &mi, sizeof mi);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (fd >= 0 && fd == S.fake_fd) {
		for (int i = 0; i < S.nring; i++) {
			struct shim_ring *r = &S.ring[i];
			if (r->offset == (uint64_t)off && len <= r->size && !r->mapped) {
				r->mapped = 1;
				shim_log("mmap(fake, len %zu, off 0x%lx) -> %s ring %p\n", len, (long)off, r->what, r->buf);
				return r->buf;
			}
		}
		shim_log("mmap(fake, len %zu, off 0x%lx) -> EINVAL\n", len, (long)off);
		errno = EINVAL; return MAP_FAILED;
	}
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}
void *mmap64(void *, size_t, int, int, int, off_t) __attribute__((alias("mmap")));

int munmap(void *addr, size_t len)
{
	for (int i = 0; i < S.nring; i++)
		if (S.ring[i].buf == addr) { S.ring[i].mapped = 0; return 0; } /* the "kernel" keeps its ring */
	return syscall(SYS_munmap, addr, len);
}

/* ---------- write() command emulation ---------- */
static void fill_query_device(struct ib_uverbs_query_device_resp *r)
{
	memset(r, 0, sizeof(*r));
	r->fw_ver = 0; r->node_guid = htobe64(0x020000fffe000001ULL); r->sys_image_guid = r->node_guid;
	r->max_mr_size = ~0ULL; r->page_size_cap = 0xfffff000;
	r->vendor_id = 0xffffff; r->vendor_part_id = 0; r->hw_ver = 0;
	r->max_qp = 1 << 17; r->max_qp_wr = 1 << 14; r->device_cap_flags = 0;
	r->max_sge = 32; r->max_sge_rd = 32; r->max_cq = 1 << 14; r->max_cqe = (1 << 15) - 1;
	r->max_mr = 1 << 18; r->max_pd = 1 << 16; r->max_qp_rd_atom = 128; r->max_res_rd_atom = 258048;
	r->max_qp_init_rd_atom = 128; r->atomic_cap = 1; r->max_mw = 1 << 16; r->max_mcast_grp = 8192;
	r->max_mcast_qp_attach = 56; r->max_total_mcast_qp_attach = 0x70000; r->max_ah = 1 << 15;
	r->max_srq = 1 << 16; r->max_srq_wr = 1 << 14; r->max_srq_sge = 27; r->max_pkeys = 64;
	r->local_ca_ack_delay = 15; r->phys_port_cnt = 1;
}

static uint32_t qpn_next = 0x11;

/* out of line, so that write()'s doorbell fast path stays a few instructions */
__attribute__((noinline)) static ssize_t handle(const void *buf, size_t len)
{
	struct shim_cmd c = shim_cmd_decode(buf, len);
	shim_cmd_zero_out(&c);
	int ex = c.ex; uint32_t num = c.num; const uint8_t *core = c.core;
	uint8_t *out = c.out, *drv_out = c.drv_out; size_t core_out_len = c.core_out_len, drv_out_len = c.drv_out_len;
#define NONEX_DRV_OUT(cresp) do { drv_out = out + sizeof(cresp); \
		drv_out_len = core_out_len > sizeof(cresp) ? core_out_len - sizeof(cresp) : 0; } while (0)

	switch (ex ? (num | 0x100) : num) {
	case IB_USER_VERBS_CMD_GET_CONTEXT: {
		struct ib_uverbs_get_context_resp *r = (void *)out;
		r->async_fd = eventfd(0, EFD_CLOEXEC); r->num_comp_vectors = 1;
		break; }
	case IB_USER_VERBS_CMD_QUERY_DEVICE:
	case 0x100 | IB_USER_VERBS_EX_CMD_QUERY_DEVICE: {
		struct ib_uverbs_ex_query_device_resp *r;
		fill_query_device(shim_query_device(&c, &r));
		break; }
	case IB_USER_VERBS_CMD_QUERY_PORT: {
		struct ib_uverbs_query_port_resp *r = (void *)out;
		r->port_cap_flags = 0x00890000; r->max_msg_sz = 1 << 31; r->gid_tbl_len = 1024; r->pkey_tbl_len = 1;
		r->state = 4; r->max_mtu = 5; r->active_mtu = 3; r->max_vl_num = 1;
		r->active_width = 1; r->active_speed = 1; r->phys_state = 5; r->link_layer = 2;
		break; }
	case IB_USER_VERBS_CMD_ALLOC_PD:
		((struct ib_uverbs_alloc_pd_resp *)out)->pd_handle = next_handle++; break;
	case IB_USER_VERBS_CMD_REG_MR: {
		struct ib_uverbs_reg_mr_resp *r = (void *)out;
		static uint32_t mr_idx = 0x123;
		r->mr_handle = next_handle++; r->lkey = (mr_idx << 8) | 0x55; r->rkey = r->lkey; mr_idx++;
		shim_log("  REG_MR -> lkey 0x%x\n", r->lkey);
		break; }
	case IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL:
		((struct ib_uverbs_create_comp_channel_resp *)out)->fd = eventfd(0, EFD_CLOEXEC); break;
	case IB_USER_VERBS_CMD_CREATE_CQ:
	case 0x100 | IB_USER_VERBS_EX_CMD_CREATE_CQ: {
		uint32_t cqe; struct ib_uverbs_create_cq_resp *r;
		if (!ex) { NONEX_DRV_OUT(struct ib_uverbs_create_cq_resp); cqe = ((const struct ib_uverbs_create_cq *)core)->cqe; r = (void *)out; }
		else { cqe = ((const struct ib_uverbs_ex_create_cq *)core)->cqe; r = &((struct ib_uverbs_ex_create_cq_resp *)out)->base;
		       ((struct ib_uverbs_ex_create_cq_resp *)out)->response_length = sizeof(struct ib_uverbs_ex_create_cq_resp); }
		if (drv_out_len < sizeof(struct rxe_create_cq_resp)) { shim_log("  CREATE_CQ: no room for mminfo\n"); errno = EINVAL; return -1; }
		/* the kernel's struct rxe_cqe (a union of struct ib_wc and struct ib_uverbs_wc, 72 bytes on
		 * x86_64) rounded up to a power of two: 128-byte slots */
		uint32_t granted; struct shim_ring *q = new_ring("cq", cqe, 128, &granted);
		if (!q) { errno = ENOMEM; return -1; }
		r->cq_handle = next_handle++; r->cqe = granted;
		put_mminfo(drv_out, q);
		S.last_cq = q; S.last_cq_handle = r->cq_handle;
		shim_log("  CREATE_CQ cqe %u -> %u, handle %u\n", cqe, granted, r->cq_handle);
		break; }
	case IB_USER_VERBS_CMD_CREATE_QP:
	case 0x100 | IB_USER_VERBS_EX_CMD_CREATE_QP: {
		struct ib_uverbs_create_qp_resp *r; uint32_t msw, mrw, mss, mrs, mil, is_srq;
		if (!ex) { const struct ib_uverbs_create_qp *c = (const void *)core; NONEX_DRV_OUT(struct ib_uverbs_create_qp_resp);
			msw = c->max_send_wr; mrw = c->max_recv_wr; mss = c->max_send_sge; mrs = c->max_recv_sge; mil = c->max_inline_data; is_srq = c->is_srq; r = (void *)out; }
		else { const struct ib_uverbs_ex_create_qp *c = (const void *)core;
			msw = c->max_send_wr; mrw = c->max_recv_wr; mss = c->max_send_sge; mrs = c->max_recv_sge; mil = c->max_inline_data; is_srq = c->is_srq;
			r = &((struct ib_uverbs_ex_create_qp_resp *)out)->base; ((struct ib_uverbs_ex_create_qp_resp *)out)->response_length = sizeof(struct ib_uverbs_ex_create_qp_resp); }
		if (drv_out_len < sizeof(struct rxe_create_qp_resp)) { shim_log("  CREATE_QP: no room for mminfo\n"); errno = EINVAL; return -1; }
		/* the kernel's rxe_qp_init_req: WQE payload = max(sge * 16, inline); SQ first, then RQ */
		uint32_t pay = mss * sizeof(struct rxe_sge) > mil ? mss * (uint32_t)sizeof(struct rxe_sge) : mil;
		uint32_t sq_wr, rq_wr = 0;
		struct shim_ring *sq = new_ring("sq", msw, pow2_at_least(sizeof(struct rxe_send_wqe) + pay), &sq_wr), *rq = NULL;
		if (!sq) { errno = ENOMEM; return -1; }
		if (!is_srq) {
			rq = new_ring("rq", mrw, pow2_at_least(sizeof(struct rxe_recv_wqe) + mrs * sizeof(struct rxe_sge)), &rq_wr);
			if (!rq) { errno = ENOMEM; return -1; }
		}
		r->qp_handle = next_handle++; r->qpn = qpn_next++;
		r->max_send_wr = sq_wr; r->max_recv_wr = rq_wr; r->max_send_sge = pay / sizeof(struct rxe_sge);
		r->max_recv_sge = mrs; r->max_inline_data = pay;
		struct rxe_create_qp_resp d; memset(&d, 0, sizeof d);
		if (rq) d.rq_mi = (struct mminfo){ rq->offset, (uint32_t)rq->size, 0 };
		d.sq_mi = (struct mminfo){ sq->offset, (uint32_t)sq->size, 0 };
		memcpy(drv_out, &d, sizeof d);
		S.last_sq = sq; S.last_rq = rq; S.last_qpn = r->qpn; S.last_qp_handle = r->qp_handle;
		shim_log("  CREATE_QP caps %u/%u/%u/%u/%u -> qpn 0x%x handle %u, send %u wr / %u sge / %u inline, recv %u wr\n",
			 msw, mrw, mss, mrs, mil, r->qpn, r->qp_handle, sq_wr, r->max_send_sge, pay, rq_wr);
		break; }
	default:
		if (shim_common_cmd(ex ? (num | 0x100) : num, &c, NULL)) return -1;
	}
	return len;
}

/* The doorbell first and cheap: librxe's ibv_post_send ends with a POST_SEND write() carrying no
 * work requests; a kernel would run the send queue. Here: return the byte count, nothing else
 * (ours' stand-in in providers/examples/rxe_hotpath_cmp.rs does the same checks). */
__attribute__((noinline)) static ssize_t real_write(int fd, const void *buf, size_t n)
{
	return syscall(SYS_write, fd, buf, n);
}
ssize_t write(int fd, const void *buf, size_t n)
{
	if (fd == S.fake_fd && fd >= 0) {
		if (n >= 8 && ((const struct ib_uverbs_cmd_hdr *)buf)->command == IB_USER_VERBS_CMD_POST_SEND) return n;
		return handle(buf, n);
	}
	return real_write(fd, buf, n);
}
