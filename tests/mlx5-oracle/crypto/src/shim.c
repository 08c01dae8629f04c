/* mlx5 crypto oracle shim: emulates the kernel side of /dev/infiniband/uverbs0 for an
 * mlx5 device. Core verbs use the write() command path (their RDMA_VERBS_IOCTL answers
 * ENOTTY, so libibverbs falls back to write()); the mlx5 DEVX driver-namespace ioctls
 * (DEVX general command, DEVX_OBJ create/destroy) are answered here and logged verbatim
 * (see devx.c). Adapted from the fake kernel of the project's first mlx5 oracle (the one behind
 * providers/tests/fixtures/mlx5/).
 * Own code, written from the uapi headers (rdma/ib_user_verbs.h, rdma/mlx5-abi.h,
 * rdma/rdma_user_ioctl_cmds.h, rdma/mlx5_user_ioctl_cmds.h). */
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
#include <rdma/mlx5-abi.h>
#include "shim.h"

static struct shim_state S = { .fake_fd = -1 };
struct shim_state *shim_state(void) { return &S; }
static uint32_t next_handle = 1;
static long pgsz;
#define SHIM_LOG_DEFAULT "/tmp/mlx5-oracle-shim.log"
#define SHIM_FAKE_NAME "/dev/infiniband/uverbs0"
/* shim_log, open / stat / close of the uverbs node */
#include "../../../support/oracle/fake_uverbs.h"

static void hexlog(const char *tag, const void *p, size_t n)
{
	const uint8_t *b = p; shim_log("  %s (%zu):", tag, n);
	for (size_t i = 0; i < n; i++) shim_log("%s%02x", (i % 32) ? "" : "\n    ", b[i]);
	shim_log("\n");
}

/* ---------- ioctl: DEVX answered (devx.c), everything else "no ioctl framework" ---------- */
int ioctl(int fd, unsigned long req, ...)
{
	va_list ap; va_start(ap, req); void *arg = va_arg(ap, void *); va_end(ap);
	if (fd >= 0 && fd == S.fake_fd) {
		const struct { uint16_t length, object_id, method_id, num_attrs; } *h = arg;
		int drc = shim_devx_ioctl(req, arg);
		if (drc != -ENOTTY) {
			if (drc < 0) { errno = -drc; return -1; }
			return 0;
		}
		shim_log("ioctl(fake, 0x%lx) obj %u method %u nattrs %u -> ENOTTY\n", req,
			 h ? h->object_id : 0, h ? h->method_id : 0, h ? h->num_attrs : 0);
		errno = ENOTTY; return -1;
	}
	return syscall(SYS_ioctl, fd, req, arg);
}

/* ---------- mmap of UAR pages ---------- */
/* SHIM_PLAIN_UAR=1 (set and not "0"): UAR pages stay ordinary read-write anonymous shared memory
 * for the whole run: shim_trap_enable() neither installs the fault / single-step handlers nor
 * protects the pages, so nothing is recorded and libmlx5's doorbell and BlueFlame stores run at
 * memory speed (the hot-path benchmark, tests/mlx5-oracle/hotpath/). Unset: unchanged. */
static int plain_uar(void)
{
	static int v = -1;
	if (v < 0) { const char *e = getenv("SHIM_PLAIN_UAR"); v = e && *e && strcmp(e, "0") != 0; }
	return v;
}
void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (fd >= 0 && fd == S.fake_fd) {
		if (!pgsz) pgsz = sysconf(_SC_PAGESIZE);
		uint64_t pg = (uint64_t)off / pgsz;
		uint32_t cmd = (pg >> 8) & 0xff, index = (pg & 0xff) | ((pg >> 16) << 8);
		shim_log("mmap(fake, len %zu, prot %d, off 0x%lx) cmd %u index %u\n", len, prot, (long)off, cmd, index);
		if ((cmd != 0 && cmd != 2 && cmd != 3) || len != (size_t)pgsz || S.nuar >= 64) {
			shim_log("  -> EINVAL\n"); errno = EINVAL; return MAP_FAILED;
		}
		void *p = (void *)syscall(SYS_mmap, addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) return p;
		S.uar[S.nuar++] = (struct shim_uar){ p, len, (uint64_t)off, cmd, index };
		if (S.trap_enabled && !plain_uar()) mprotect(p, len, PROT_NONE);
		shim_log("  -> %p (uar #%d)%s\n", p, S.nuar - 1, plain_uar() ? " plain" : "");
		return p;
	}
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}
void *mmap64(void *, size_t, int, int, int, off_t) __attribute__((alias("mmap")));

/* ---------- UAR store capture by fault + single step ---------- */
static uint8_t snap[65536]; static int trap_uar = -1; static uint64_t trap_fault;
static int uar_of(uint64_t a)
{
	for (int i = 0; i < S.nuar; i++)
		if (a >= (uint64_t)S.uar[i].addr && a < (uint64_t)S.uar[i].addr + S.uar[i].len) return i;
	return -1;
}
static void on_segv(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	int u = uar_of((uint64_t)si->si_addr);
	if (u < 0 || trap_uar >= 0) { signal(SIGSEGV, SIG_DFL); raise(SIGSEGV); return; }
	mprotect(S.uar[u].addr, S.uar[u].len, PROT_READ | PROT_WRITE);
	memcpy(snap, S.uar[u].addr, S.uar[u].len);
	trap_uar = u; trap_fault = (uint64_t)si->si_addr;
	uc->uc_mcontext.gregs[REG_EFL] |= 0x100; /* TF */
	(void)sig;
}
static void on_trap(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	(void)sig; (void)si;
	if (trap_uar < 0) return;
	struct shim_uar *U = &S.uar[trap_uar];
	const uint8_t *now = U->addr; size_t lo = (size_t)-1, hi = 0;
	for (size_t i = 0; i < U->len; i++) if (now[i] != snap[i]) { if (lo == (size_t)-1) lo = i; hi = i; }
	size_t fo = trap_fault - (uint64_t)U->addr;
	if (lo == (size_t)-1 || fo < lo) lo = fo;
	if (hi < lo) hi = lo;
	if (S.nev < 4096) {
		struct shim_write_ev *e = &S.ev[S.nev++];
		e->uar_page = trap_uar; e->uar_off = lo; e->fault_addr = trap_fault;
		/* x86-64 libmlx5 MMIO stores are 8-byte movq: report the 8 bytes at the fault address */
		e->uar_off = fo; e->len = hi - lo + 1;
		memcpy(e->bytes, now + fo, fo + 8 <= U->len ? 8 : U->len - fo);
	}
	mprotect(U->addr, U->len, PROT_NONE);
	trap_uar = -1;
	uc->uc_mcontext.gregs[REG_EFL] &= ~0x100;
}
void shim_trap_enable(int on)
{
	static int inst;
	if (plain_uar()) { S.trap_enabled = 0; return; } /* SHIM_PLAIN_UAR: never trap, never record */
	if (!inst) {
		struct sigaction sa = {0}; sa.sa_flags = SA_SIGINFO;
		sa.sa_sigaction = on_segv; sigaction(SIGSEGV, &sa, NULL);
		sa.sa_sigaction = on_trap; sigaction(SIGTRAP, &sa, NULL);
		inst = 1;
	}
	S.trap_enabled = on;
	for (int i = 0; i < S.nuar; i++) mprotect(S.uar[i].addr, S.uar[i].len, on ? PROT_NONE : PROT_READ | PROT_WRITE);
}
void shim_uar_fill(uint8_t v)
{
	for (int i = 0; i < S.nuar; i++) {
		mprotect(S.uar[i].addr, S.uar[i].len, PROT_READ | PROT_WRITE);
		memset(S.uar[i].addr, v, S.uar[i].len);
		if (S.trap_enabled) mprotect(S.uar[i].addr, S.uar[i].len, PROT_NONE);
	}
}
void shim_ev_reset(void) { S.nev = 0; }

/* ---------- write() command emulation ---------- */
static uint32_t qpn_next = 0x000b1c;
static uint32_t cqn_next = 0x00000407;

static int fill_query_device(struct ib_uverbs_query_device_resp *r)
{
	memset(r, 0, sizeof(*r));
	r->fw_ver = (20ULL << 32) | (31ULL << 16) | 1014; /* 20.31.1014 */
	r->node_guid = htobe64(0x0c42a10300aabb01ULL);
	r->sys_image_guid = htobe64(0x0c42a10300aabb01ULL);
	r->max_mr_size = ~0ULL; r->page_size_cap = 0xfffffffffffff000ULL;
	r->vendor_id = 0x02c9; r->vendor_part_id = 4123; r->hw_ver = 0;
	r->max_qp = 1 << 18; r->max_qp_wr = 1 << 15; r->device_cap_flags = 0xe5721c36;
	r->max_sge = 30; r->max_sge_rd = 30; r->max_cq = 1 << 24; r->max_cqe = (1 << 22) - 1;
	r->max_mr = 1 << 24; r->max_pd = 1 << 24; r->max_qp_rd_atom = 16; r->max_res_rd_atom = 16 << 18;
	r->max_qp_init_rd_atom = 16; r->atomic_cap = 1; r->max_mw = 1 << 24; r->max_mcast_grp = 1 << 21;
	r->max_mcast_qp_attach = 240; r->max_total_mcast_qp_attach = 240 << 21; r->max_ah = 0x7fffffff;
	r->max_srq = 1 << 23; r->max_srq_wr = (1 << 15) - 1; r->max_srq_sge = 31; r->max_pkeys = 128;
	r->local_ca_ack_delay = 16; r->phys_port_cnt = 1;
	return 0;
}

/* MODIFY_QP: the harness reads the last mask and state */
static void record_modify(const struct ib_uverbs_modify_qp *c)
{
	S.last_modify_qp_mask = c->attr_mask; S.last_modify_state = c->qp_state;
}

static ssize_t handle(const void *buf, size_t len)
{
	struct shim_cmd c = shim_cmd_decode(buf, len);
	hexlog("req", buf, len);
	shim_cmd_zero_out(&c);
	int ex = c.ex; uint32_t num = c.num;
	const uint8_t *core = c.core, *drv_in = c.drv_in; size_t core_len = c.core_len, drv_in_len = c.drv_in_len;
	uint8_t *out = c.out, *drv_out = c.drv_out; size_t core_out_len = c.core_out_len, drv_out_len = c.drv_out_len;

#define NONEX_SPLIT(creq, cresp) do { drv_in = core + sizeof(creq); drv_in_len = core_len - sizeof(creq) ; \
		drv_out = out + sizeof(cresp); drv_out_len = core_out_len > sizeof(cresp) ? core_out_len - sizeof(cresp) : 0; } while (0)

	switch (ex ? (num | 0x100) : num) {
	case IB_USER_VERBS_CMD_GET_CONTEXT: {
		NONEX_SPLIT(struct ib_uverbs_get_context, struct ib_uverbs_get_context_resp);
		const struct mlx5_ib_alloc_ucontext_req_v2 *rq = (const void *)drv_in;
		if (drv_in_len >= 12 && (rq->flags & MLX5_IB_ALLOC_UCTX_DEVX)) {
			if (getenv("SHIM_NO_DEVX")) { shim_log("  DEVX requested -> EOPNOTSUPP (SHIM_NO_DEVX)\n"); errno = EOPNOTSUPP; return -1; }
			shim_log("  DEVX requested -> accepted (uid 1)\n");
			S.devx = 1;
		}
		struct ib_uverbs_get_context_resp *r = (void *)out;
		r->async_fd = eventfd(0, EFD_CLOEXEC); r->num_comp_vectors = 8;
		struct mlx5_ib_alloc_ucontext_resp *m = (void *)drv_out;
		uint32_t tot = rq->total_num_bfregs; if (tot < 2) tot = 2; tot = (tot + 1) & ~1u;
		m->qp_tab_size = 1 << 18; m->bf_reg_size = 512; m->tot_bfregs = tot; m->cache_line_size = 64;
		m->max_sq_desc_sz = 1024; /* ConnectX max_wqe_sz_sq; 512 would refuse perftest's 512-byte inline cap */ m->max_rq_desc_sz = 512; m->max_send_wqebb = 1 << 15; m->max_recv_wr = 1 << 15;
		m->max_srq_recv_wr = 1 << 15; m->num_ports = 1; m->flow_action_flags = 0; m->comp_mask = 0;
		m->response_length = offsetof(struct mlx5_ib_alloc_ucontext_resp, response_length) + 4;
		if (drv_out_len >= offsetof(struct mlx5_ib_alloc_ucontext_resp, cqe_version) + 1) { m->cqe_version = 1; m->response_length = offsetof(struct mlx5_ib_alloc_ucontext_resp, cqe_version) + 4; }
		m->cmds_supp_uhw = MLX5_USER_CMDS_SUPP_UHW_QUERY_DEVICE | MLX5_USER_CMDS_SUPP_UHW_CREATE_AH;
		m->eth_min_inline = 1; /* MLX5_USER_INLINE_MODE_NONE + 1 */
		m->clock_info_versions = 0; m->hca_core_clock_offset = 0;
		m->log_uar_size = 12; m->num_uars_per_page = pgsz ? pgsz / 4096 : sysconf(_SC_PAGESIZE) / 4096;
		m->num_dyn_bfregs = 0; m->dump_fill_mkey = 0;
		if (drv_out_len >= sizeof(*m)) m->response_length = sizeof(*m);
		shim_log("  GET_CONTEXT req tot_bfregs %u lowlat %u flags 0x%x lib_caps 0x%llx drvin %zu drvout %zu -> tot_bfregs %u async_fd %d\n",
			 rq->total_num_bfregs, rq->num_low_latency_bfregs, drv_in_len >= 12 ? rq->flags : 0,
			 drv_in_len >= 32 ? (unsigned long long)rq->lib_caps : 0ULL, drv_in_len, drv_out_len, tot, r->async_fd);
		break; }
	case IB_USER_VERBS_CMD_QUERY_DEVICE:
	case 0x100 | IB_USER_VERBS_EX_CMD_QUERY_DEVICE: {
		struct ib_uverbs_ex_query_device_resp *r;
		fill_query_device(shim_query_device(&c, &r));
		if (r) { r->timestamp_mask = (1ULL << 63) - 1; r->hca_core_clock = 156250; r->device_cap_flags_ex = 0xe5721c36; }
		break; }
	case IB_USER_VERBS_CMD_QUERY_PORT: {
		struct ib_uverbs_query_port_resp *r = (void *)out;
		r->port_cap_flags = 0x04010000; r->max_msg_sz = 1 << 30; r->gid_tbl_len = 256; r->pkey_tbl_len = 1;
		r->lid = 0; r->sm_lid = 0; r->state = 4; r->max_mtu = 5; r->active_mtu = 5; r->lmc = 0; r->max_vl_num = 4;
		r->active_width = 2; r->active_speed = 64; r->phys_state = 5; r->link_layer = 2; r->flags = 0;
		break; }
	case IB_USER_VERBS_CMD_ALLOC_PD: {
		NONEX_SPLIT(struct ib_uverbs_alloc_pd, struct ib_uverbs_alloc_pd_resp);
		((struct ib_uverbs_alloc_pd_resp *)out)->pd_handle = next_handle++;
		if (drv_out_len >= 4) ((struct mlx5_ib_alloc_pd_resp *)drv_out)->pdn = 0x19;
		break; }
	case IB_USER_VERBS_CMD_REG_MR: {
		const struct ib_uverbs_reg_mr *c = (const void *)core;
		struct ib_uverbs_reg_mr_resp *r = (void *)out;
		static uint32_t mkey_idx = 0x1234;
		r->mr_handle = next_handle++; r->lkey = (mkey_idx << 8) | 0x42; r->rkey = r->lkey; mkey_idx++;
		shim_log("  REG_MR start 0x%llx len %llu hca_va 0x%llx access 0x%x -> lkey 0x%x\n", (unsigned long long)c->start,
			 (unsigned long long)c->length, (unsigned long long)c->hca_va, c->access_flags, r->lkey);
		break; }
	case IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL:
		((struct ib_uverbs_create_comp_channel_resp *)out)->fd = eventfd(0, EFD_CLOEXEC); break;
	case IB_USER_VERBS_CMD_CREATE_CQ:
	case 0x100 | IB_USER_VERBS_EX_CMD_CREATE_CQ: {
		uint32_t cqe; const struct mlx5_ib_create_cq *d; struct ib_uverbs_create_cq_resp *r;
		if (!ex) { NONEX_SPLIT(struct ib_uverbs_create_cq, struct ib_uverbs_create_cq_resp); cqe = ((const struct ib_uverbs_create_cq *)core)->cqe; r = (void *)out; }
		else { cqe = ((const struct ib_uverbs_ex_create_cq *)core)->cqe; r = &((struct ib_uverbs_ex_create_cq_resp *)out)->base;
		       ((struct ib_uverbs_ex_create_cq_resp *)out)->response_length = sizeof(struct ib_uverbs_ex_create_cq_resp); }
		d = (const void *)drv_in;
		uint32_t n = 1; while (n < cqe + 1) n <<= 1;
		r->cq_handle = next_handle++; r->cqe = n - 1;
		struct shim_cq *q = &S.cq[S.ncq++];
		*q = (struct shim_cq){ d->buf_addr, d->db_addr, d->cqe_size, n, cqn_next++, r->cq_handle, d->flags };
		if (drv_out_len >= 4) ((struct mlx5_ib_create_cq_resp *)drv_out)->cqn = q->cqn;
		shim_log("  CREATE_CQ cqe %u buf 0x%llx db 0x%llx cqe_size %u flags 0x%x comp_en %u -> cqn 0x%x\n", cqe,
			 (unsigned long long)d->buf_addr, (unsigned long long)d->db_addr, d->cqe_size, d->flags, d->cqe_comp_en, q->cqn);
		break; }
	case IB_USER_VERBS_CMD_CREATE_QP:
	case 0x100 | IB_USER_VERBS_EX_CMD_CREATE_QP: {
		const struct mlx5_ib_create_qp *d; struct ib_uverbs_create_qp_resp *r;
		uint32_t msw, mrw, mss, mrs, mil; uint8_t sig, type;
		if (!ex) { const struct ib_uverbs_create_qp *c = (const void *)core; NONEX_SPLIT(struct ib_uverbs_create_qp, struct ib_uverbs_create_qp_resp);
			msw = c->max_send_wr; mrw = c->max_recv_wr; mss = c->max_send_sge; mrs = c->max_recv_sge; mil = c->max_inline_data; sig = c->sq_sig_all; type = c->qp_type; r = (void *)out; }
		else { const struct ib_uverbs_ex_create_qp *c = (const void *)core;
			msw = c->max_send_wr; mrw = c->max_recv_wr; mss = c->max_send_sge; mrs = c->max_recv_sge; mil = c->max_inline_data; sig = c->sq_sig_all; type = c->qp_type;
			r = &((struct ib_uverbs_ex_create_qp_resp *)out)->base; ((struct ib_uverbs_ex_create_qp_resp *)out)->response_length = sizeof(struct ib_uverbs_ex_create_qp_resp); }
		d = (const void *)drv_in;
		struct shim_qp *q = &S.qp[S.nqp++];
		memset(q, 0, sizeof(*q));
		q->buf_addr = d->buf_addr; q->db_addr = d->db_addr; q->sq_wqe_count = d->sq_wqe_count; q->rq_wqe_count = d->rq_wqe_count;
		q->rq_wqe_shift = d->rq_wqe_shift; q->flags = d->flags; q->uidx = d->uidx; q->bfreg_index_req = d->bfreg_index;
		q->qpn = qpn_next++; q->handle = next_handle++; q->max_send_wr = msw; q->max_recv_wr = mrw; q->max_send_sge = mss;
		q->max_recv_sge = mrs; q->max_inline = mil; q->sq_sig_all = sig; q->qp_type = type;
		/* kernel static bfreg allocation: first high-class bfreg = total - lowlat (gross index) */
		q->resp_bfreg_index = 24 + 4 * (S.nqp - 1) / 2 + ((S.nqp - 1) & 1);
		r->qp_handle = q->handle; r->qpn = q->qpn; r->max_send_wr = msw; r->max_recv_wr = mrw; r->max_send_sge = mss;
		r->max_recv_sge = mrs; r->max_inline_data = mil;
		if (drv_out_len >= 4) ((struct mlx5_ib_create_qp_resp *)drv_out)->bfreg_index = q->resp_bfreg_index;
		shim_log("  CREATE_QP type %u sig_all %u caps %u/%u/%u/%u/%u buf 0x%llx db 0x%llx sq_wqe_cnt %u rq_wqe_cnt %u rq_shift %u flags 0x%x uidx 0x%x -> qpn 0x%x bfreg %u\n",
			 type, sig, msw, mrw, mss, mrs, mil, (unsigned long long)d->buf_addr, (unsigned long long)d->db_addr,
			 d->sq_wqe_count, d->rq_wqe_count, d->rq_wqe_shift, d->flags, d->uidx, q->qpn, q->resp_bfreg_index);
		break; }
	default:
		if (shim_common_cmd(ex ? (num | 0x100) : num, &c, record_modify)) return -1;
	}
	if (out) hexlog("resp", out, core_out_len + (ex ? drv_out_len : 0));
	return len;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	if (fd >= 0 && fd == S.fake_fd) return handle(buf, n);
	return syscall(SYS_write, fd, buf, n);
}
