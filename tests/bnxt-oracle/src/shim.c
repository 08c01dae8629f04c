/* bnxt_re oracle shim: emulates the kernel side of /dev/infiniband/uverbs0 for a bnxt_re device
 * (Broadcom NetXtreme-E), so that rdma-core 44's libbnxt_re runs without hardware. Core verbs use
 * the write() path (every RDMA_VERBS_IOCTL answers ENOTTY, so libibverbs falls back to write()).
 * The shared page and the doorbell page (DPI) are anonymous memory; every 64-bit store to the DPI
 * page is recorded (page protected, each store caught by a fault and single-stepped).
 * Own code, written from the uAPI headers (rdma/ib_user_verbs.h, rdma/bnxt_re-abi.h). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <signal.h>
#include <ucontext.h>
#include <dlfcn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/bnxt_re-abi.h>
#include "shim.h"

static struct shim_state S = { .fake_fd = -1, .next_avid = 0x1a };
struct shim_state *shim_state(void) { return &S; }
static uint32_t next_handle = 1;
#define SHIM_LOG_DEFAULT "/tmp/bnxt-oracle-shim.log"
#define SHIM_FAKE_NAME "/dev/infiniband/uverbs0"
#include "../../support/oracle/fake_uverbs.h"

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap; va_start(ap, req); void *arg = va_arg(ap, void *); va_end(ap);
	if (fd >= 0 && fd == S.fake_fd) { errno = ENOTTY; return -1; }
	return syscall(SYS_ioctl, fd, req, arg);
}

/* ---------- doorbell capture: fault on the protected DPI page, single-step the store ---------- */
static uint64_t trap_addr;
static void on_segv(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	uint64_t a = (uint64_t)si->si_addr, d = (uint64_t)S.dpi;
	if (!S.dpi || a < d || a >= d + SHIM_PG || trap_addr) { signal(SIGSEGV, SIG_DFL); raise(sig); return; }
	mprotect(S.dpi, SHIM_PG, PROT_READ | PROT_WRITE);
	trap_addr = a;
	uc->uc_mcontext.gregs[REG_EFL] |= 0x100; /* TF: trap after the store */
}
static void on_trap(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	(void)sig; (void)si;
	if (!trap_addr) return;
	if (S.ndb < 4096) memcpy(&S.db[S.ndb++], (void *)(trap_addr & ~7ULL), 8);
	mprotect(S.dpi, SHIM_PG, PROT_NONE);
	trap_addr = 0;
	uc->uc_mcontext.gregs[REG_EFL] &= ~0x100;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (fd >= 0 && fd == S.fake_fd) {
		shim_log("mmap(fake, len %zu, prot %d, off 0x%lx)\n", len, prot, (long)off);
		if (len != SHIM_PG || (off != 0 && (uint64_t)off != SHIM_DBR)) { errno = EINVAL; return MAP_FAILED; }
		void *p = (void *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) return p;
		if (off == 0) { S.shpg = p; return p; }
		S.dpi = p;
		struct sigaction sa = {0}; sa.sa_flags = SA_SIGINFO;
		sa.sa_sigaction = on_segv; sigaction(SIGSEGV, &sa, NULL);
		sa.sa_sigaction = on_trap; sigaction(SIGTRAP, &sa, NULL);
		mprotect(p, len, PROT_NONE);
		return p;
	}
	void *p = (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && fd < 0 && (flags & MAP_ANONYMOUS) && S.nanon < 256)
		S.anon[S.nanon++] = (struct shim_anon){ p, len };
	return p;
}
void *mmap64(void *, size_t, int, int, int, off_t) __attribute__((alias("mmap")));

size_t shim_anon_len(const void *addr)
{
	for (int i = S.nanon - 1; i >= 0; i--) if (S.anon[i].addr == addr) return S.anon[i].len;
	return 0;
}

/* ---------- write() commands ---------- */
static void query_device(struct ib_uverbs_query_device_resp *r)
{
	memset(r, 0, sizeof(*r));
	r->fw_ver = 0x00e00b02ULL; r->node_guid = htobe64(0x0a0b0cfffe0d0e0fULL); r->sys_image_guid = r->node_guid;
	r->max_mr_size = ~0ULL; r->page_size_cap = 0x1000 | 0x2000 | 0x10000 | 0x200000;
	r->vendor_id = 0x14e4; r->vendor_part_id = 0x1750; r->hw_ver = 0;
	r->max_qp = 65536; r->max_qp_wr = 65535; r->device_cap_flags = 0x00228000; r->max_sge = 6; r->max_sge_rd = 6;
	r->max_cq = 131072; r->max_cqe = SHIM_MAX_CQD; r->max_mr = 262144; r->max_pd = 65536; r->max_qp_rd_atom = 126;
	r->max_qp_init_rd_atom = 126; r->atomic_cap = 1; r->max_ah = 131072; r->max_srq = 8192; r->max_srq_wr = 1048575;
	r->max_srq_sge = 6; r->max_pkeys = 1; r->local_ca_ack_delay = 16; r->phys_port_cnt = 1;
}

static void get_context(struct shim_cmd *c)
{
	struct ib_uverbs_get_context_resp *r = (void *)c->out;
	r->async_fd = eventfd(0, EFD_CLOEXEC); r->num_comp_vectors = 4;
	struct bnxt_re_uctx_resp *u = (void *)(c->out + sizeof(*r));
	memset(u, 0, sizeof(*u));
	const char *chip = getenv("SHIM_CHIP"), *mode = getenv("SHIM_MODE");
	u->dev_id = 0; u->max_qp = 65536; u->pg_size = SHIM_PG; u->cqe_sz = 32; u->max_cqd = SHIM_MAX_CQD;
	u->comp_mask = BNXT_RE_UCNTX_CMASK_HAVE_CCTX; u->chip_id0 = chip ? strtoul(chip, NULL, 0) : 0x16d7;
	if (mode) { u->comp_mask |= BNXT_RE_UCNTX_CMASK_HAVE_MODE; u->mode = strcmp(mode, "variable") == 0; }
	shim_log("  GET_CONTEXT -> chip 0x%x comp_mask 0x%llx mode %u\n", u->chip_id0, (unsigned long long)u->comp_mask, u->mode);
}

static void create_cq(struct shim_cmd *c)
{
	const struct ib_uverbs_create_cq *q = (const void *)c->core;
	const struct bnxt_re_cq_req *d = (const void *)(c->core + sizeof(*q));
	struct ib_uverbs_create_cq_resp *r = (void *)c->out;
	r->cq_handle = next_handle++; r->cqe = q->cqe;
	struct shim_obj *o = &S.cq[S.ncq++];
	*o = (struct shim_obj){ d->cq_va, 0, d->cq_handle, 0x40 + S.ncq };
	struct bnxt_re_cq_resp *b = (void *)(c->out + sizeof(*r));
	b->cqid = o->id; b->tail = 0; b->phase = 1;
	shim_log("  CREATE_CQ cqe %u va 0x%llx -> cqid %u\n", q->cqe, (unsigned long long)d->cq_va, o->id);
}

static void create_qp(struct shim_cmd *c)
{
	const struct ib_uverbs_create_qp *q = (const void *)c->core;
	const struct bnxt_re_qp_req *d = (const void *)(c->core + sizeof(*q));
	struct ib_uverbs_create_qp_resp *r = (void *)c->out;
	struct shim_obj *o = &S.qp[S.nqp++];
	*o = (struct shim_obj){ d->qpsva, d->qprva, d->qp_handle, 0x100 + S.nqp };
	r->qp_handle = next_handle++; r->qpn = o->id; r->max_send_wr = q->max_send_wr; r->max_recv_wr = q->max_recv_wr;
	r->max_send_sge = q->max_send_sge; r->max_recv_sge = q->max_recv_sge; r->max_inline_data = q->max_inline_data;
	((struct bnxt_re_qp_resp *)(c->out + sizeof(*r)))->qpid = o->id;
	shim_log("  CREATE_QP type %u caps %u/%u/%u/%u/%u sq 0x%llx rq 0x%llx -> qpid 0x%x\n", q->qp_type, q->max_send_wr,
		 q->max_recv_wr, q->max_send_sge, q->max_recv_sge, q->max_inline_data, (unsigned long long)d->qpsva,
		 (unsigned long long)d->qprva, o->id);
}

static void create_srq(struct shim_cmd *c)
{
	const struct ib_uverbs_create_srq *q = (const void *)c->core;
	const struct bnxt_re_srq_req *d = (const void *)(c->core + sizeof(*q));
	struct ib_uverbs_create_srq_resp *r = (void *)c->out;
	struct shim_obj *o = &S.srq[S.nsrq++];
	*o = (struct shim_obj){ d->srqva, 0, d->srq_handle, 0x200 + S.nsrq };
	r->srq_handle = next_handle++; r->max_wr = q->max_wr; r->max_sge = q->max_sge; r->srqn = o->id;
	((struct bnxt_re_srq_resp *)(c->out + sizeof(*r)))->srqid = o->id;
}

static ssize_t handle(const void *buf, size_t len)
{
	struct shim_cmd c = shim_cmd_decode(buf, len);
	shim_cmd_zero_out(&c);
	uint32_t key = c.ex ? (c.num | 0x100) : c.num;
	switch (key) {
	case IB_USER_VERBS_CMD_GET_CONTEXT: get_context(&c); break;
	case IB_USER_VERBS_CMD_QUERY_DEVICE:
	case 0x100 | IB_USER_VERBS_EX_CMD_QUERY_DEVICE: {
		struct ib_uverbs_ex_query_device_resp *ex;
		query_device(shim_query_device(&c, &ex));
		break; }
	case IB_USER_VERBS_CMD_QUERY_PORT: {
		struct ib_uverbs_query_port_resp *r = (void *)c.out;
		r->port_cap_flags = 0x04010000; r->max_msg_sz = 1 << 31; r->gid_tbl_len = 256; r->pkey_tbl_len = 1;
		r->state = 4; r->max_mtu = 5; r->active_mtu = 3; r->active_width = 2; r->active_speed = 64;
		r->phys_state = 5; r->link_layer = 2;
		break; }
	case IB_USER_VERBS_CMD_ALLOC_PD: {
		struct ib_uverbs_alloc_pd_resp *r = (void *)c.out;
		r->pd_handle = next_handle++;
		struct bnxt_re_pd_resp *b = (void *)(c.out + sizeof(*r));
		b->pdid = 3; b->dpi = 5; b->dbr = SHIM_DBR;
		break; }
	case IB_USER_VERBS_CMD_REG_MR: {
		struct ib_uverbs_reg_mr_resp *r = (void *)c.out;
		r->mr_handle = next_handle++; r->lkey = 0x00abc1; r->rkey = 0x00abc1;
		break; }
	case IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL:
		((struct ib_uverbs_create_comp_channel_resp *)c.out)->fd = eventfd(0, EFD_CLOEXEC); break;
	case IB_USER_VERBS_CMD_CREATE_CQ: create_cq(&c); break;
	case IB_USER_VERBS_CMD_CREATE_QP: create_qp(&c); break;
	case IB_USER_VERBS_CMD_CREATE_SRQ: create_srq(&c); break;
	case IB_USER_VERBS_CMD_CREATE_AH:
		((struct ib_uverbs_create_ah_resp *)c.out)->ah_handle = next_handle++;
		/* the kernel leaves the new AH's id in the shared page */
		*(uint32_t *)((char *)S.shpg + BNXT_RE_AVID_OFFT) = S.next_avid++;
		break;
	case IB_USER_VERBS_CMD_DESTROY_SRQ: case IB_USER_VERBS_CMD_DESTROY_AH: break;
	default:
		if (shim_common_cmd(key, &c, NULL)) return -1;
	}
	return len;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	if (fd >= 0 && fd == S.fake_fd) return handle(buf, n);
	return syscall(SYS_write, fd, buf, n);
}
