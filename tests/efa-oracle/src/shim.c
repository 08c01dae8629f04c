/* EFA oracle shim: the kernel side of /dev/infiniband/uverbs0 for one EFA device, enough for
 * Debian's libefa (rdma-core 44) to open it and create a PD, CQs, UD and SRD QPs and AHs. Core
 * verbs go through write() (the ioctl path answers ENOTTY, so libibverbs falls back); the
 * driver data follows the kernel's rdma/efa-abi.h. Every mmap key the answers hand out maps
 * plain anonymous memory, which the harness reads (LLQ, doorbells) and writes (completions).
 * Own code, written from the uAPI headers and the shared fake (tests/support/oracle/). */
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
#include <rdma/efa-abi.h>
#include "shim.h"

static struct shim_state S = { .fake_fd = -1, .caps = EFA_QUERY_DEVICE_CAPS_RDMA_READ, .sub_cqs_per_cq = 2 };
struct shim_state *shim_state(void) { return &S; }
static uint32_t next_handle = 1;
static uint64_t next_key = 0x10000;
#define SHIM_LOG_DEFAULT "/tmp/efa-oracle-shim.log"
#define SHIM_FAKE_NAME "/dev/infiniband/uverbs0"
#include "../../support/oracle/fake_uverbs.h"

static FILE *setup_file(void);
static FILE *setup_f;

int ioctl(int fd, unsigned long req, ...)
{
	va_list ap; va_start(ap, req); void *arg = va_arg(ap, void *); va_end(ap);
	if (fd >= 0 && fd == S.fake_fd) { errno = ENOTTY; return -1; }
	return syscall(SYS_ioctl, fd, req, arg);
}

void *shim_map_of(uint64_t key)
{
	for (int i = 0; i < S.nmap; i++) if (S.map[i].key == key) return S.map[i].addr;
	return NULL;
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (fd >= 0 && fd == S.fake_fd) {
		void *p = (void *)syscall(SYS_mmap, addr, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED || S.nmap >= 64) { errno = ENOMEM; return MAP_FAILED; }
		S.map[S.nmap++] = (struct shim_map){ (uint64_t)off, p, len };
		shim_log("mmap(fake, len %zu, prot %d, key 0x%lx) -> %p\n", len, prot, (long)off, p);
		if (setup_file()) fprintf(setup_f, "{\"ev\":\"mmap\",\"key\":%llu,\"len\":%zu,\"prot\":%d}\n", (unsigned long long)off, len, prot);
		return p;
	}
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}
void *mmap64(void *, size_t, int, int, int, off_t) __attribute__((alias("mmap")));

static uint64_t new_key(void) { uint64_t k = next_key; next_key += 0x10000; return k; }

/* The set-up record (SHIM_SETUP names the file; none: no record): each set-up command's driver
 * data as libefa sent it and the answer the fake gave, and each mmap libefa made of the fake
 * fd, in order: what the Rust side compares its own udata and mappings with. */
static FILE *setup_file(void)
{
	static int tried;
	if (!tried) { const char *p = getenv("SHIM_SETUP"); tried = 1; if (p) setup_f = fopen(p, "w"); if (setup_f) setvbuf(setup_f, NULL, _IOLBF, 0); }
	return setup_f;
}
static void hexout(FILE *f, const uint8_t *b, size_t n) { for (size_t i = 0; i < n; i++) fprintf(f, "%02x", b ? b[i] : 0); }
/* one command: its name, the core request's size (to split a legacy command's driver data off)
 * and the core response's, and a number libefa chose in the core request (CQ size, QP type) */
static void setup_cmd(const struct shim_cmd *c, const char *name, size_t core_in, size_t core_out, long arg)
{
	FILE *f = setup_file(); if (!f) return;
	const uint8_t *in = c->ex ? c->drv_in : c->core + core_in;
	size_t in_len = c->ex ? c->drv_in_len : c->core_len - core_in;
	const uint8_t *o = c->ex ? c->drv_out : (c->out ? c->out + core_out : NULL);
	size_t out_len = c->ex ? c->drv_out_len : c->core_out_len - core_out;
	fprintf(f, "{\"ev\":\"cmd\",\"cmd\":\"%s\",\"arg\":%ld,\"drv_in\":\"", name, arg);
	hexout(f, in, in_len);
	fprintf(f, "\",\"drv_out\":\"");
	hexout(f, o, out_len);
	fprintf(f, "\"}\n");
}

static void query_device(const struct shim_cmd *c)
{
	struct ib_uverbs_ex_query_device_resp *ex;
	struct ib_uverbs_query_device_resp *r = shim_query_device(c, &ex);
	r->fw_ver = 0; r->vendor_id = 0x1d0f; r->vendor_part_id = 0xefa0; r->max_qp = 256; r->max_qp_wr = 4096;
	r->max_sge = 2; r->max_sge_rd = 1; r->max_cq = 256; r->max_cqe = 32768; r->max_mr = 1 << 16; r->max_pd = 256;
	r->max_ah = 1024; r->max_pkeys = 1; r->phys_port_cnt = 1; r->max_mr_size = 1ULL << 40; r->page_size_cap = 0xfffff000;
	if (ex && c->drv_out && c->drv_out_len >= sizeof(struct efa_ibv_ex_query_device_resp)) {
		struct efa_ibv_ex_query_device_resp *d = (void *)c->drv_out;
		d->max_sq_wr = 4096; d->max_rq_wr = 4096; d->max_sq_sge = 2; d->max_rq_sge = 2; d->max_rdma_size = 1 << 30;
		/* SHIM_CAPS: the caps the fake device reports instead (the events run adds CQ
		 * notifications, without which libefa refuses a completion channel) */
		const char *caps = getenv("SHIM_CAPS");
		d->device_caps = caps ? (uint32_t)strtoul(caps, NULL, 0) : S.caps;
	}
	if (ex) setup_cmd(c, "EX_QUERY_DEVICE", 0, 0, 0);
}

/* CREATE_CQ, legacy (libibverbs' fallback when the ioctl path is refused) or extended */
static void create_cq(const struct shim_cmd *c)
{
	const struct efa_ibv_create_cq *d; struct ib_uverbs_create_cq_resp *r; struct efa_ibv_create_cq_resp *dr; uint32_t cqe;
	if (c->ex) {
		cqe = ((const struct ib_uverbs_ex_create_cq *)c->core)->cqe; d = (const void *)c->drv_in;
		struct ib_uverbs_ex_create_cq_resp *x = (void *)c->out;
		x->response_length = sizeof(*x); r = &x->base; dr = (void *)c->drv_out;
	} else {
		cqe = ((const struct ib_uverbs_create_cq *)c->core)->cqe;
		d = (const void *)(c->core + sizeof(struct ib_uverbs_create_cq));
		r = (void *)c->out; dr = (void *)(c->out + sizeof(*r));
	}
	struct shim_cq *q = &S.cq[S.ncq++];
	r->cq_handle = next_handle++; r->cqe = cqe;
	*q = (struct shim_cq){ r->cq_handle, cqe, d->cq_entry_size, d->num_sub_cqs, 5 + S.ncq, 0x80, new_key(), new_key() };
	dr->comp_mask = EFA_CREATE_CQ_RESP_DB_OFF; dr->q_mmap_key = q->key;
	dr->q_mmap_size = (uint64_t)q->cqe * q->entry_size * q->num_sub_cqs; dr->cq_idx = q->cq_idx;
	dr->db_off = q->db_off; dr->db_mmap_key = q->db_key;
	setup_cmd(c, "CREATE_CQ", sizeof(struct ib_uverbs_create_cq), sizeof(*r), cqe);
	shim_log("  CREATE_CQ cqe %u entry %u subs %u flags 0x%x -> idx %u\n", cqe, d->cq_entry_size, d->num_sub_cqs, d->flags, q->cq_idx);
}

static void create_qp(const struct shim_cmd *c)
{
	const struct ib_uverbs_create_qp *core = (const void *)c->core;
	const struct efa_ibv_create_qp *d = (const void *)(c->core + sizeof(*core));
	struct ib_uverbs_create_qp_resp *r = (void *)c->out;
	struct efa_ibv_create_qp_resp *dr = (void *)(c->out + sizeof(*r));
	struct shim_qp *q = &S.qp[S.nqp++];
	memset(q, 0, sizeof(*q));
	q->qpn = 0x10 + S.nqp; q->handle = next_handle++;
	q->rq_ring_size = d->rq_ring_size; q->sq_ring_size = d->sq_ring_size; q->driver_qp_type = d->driver_qp_type;
	q->llq_key = new_key(); q->sq_db_key = new_key(); q->rq_key = new_key(); q->rq_db_key = new_key();
	q->llq_off = 0x40; q->sq_db_off = 0x8; q->rq_db_off = 0x10; q->send_sub_cq = 0; q->recv_sub_cq = 1;
	r->qp_handle = q->handle; r->qpn = q->qpn; r->max_send_wr = core->max_send_wr; r->max_recv_wr = core->max_recv_wr;
	r->max_send_sge = core->max_send_sge; r->max_recv_sge = core->max_recv_sge; r->max_inline_data = core->max_inline_data;
	dr->rq_db_offset = q->rq_db_off; dr->sq_db_offset = q->sq_db_off; dr->llq_desc_offset = q->llq_off;
	dr->rq_mmap_key = q->rq_key; dr->rq_mmap_size = d->rq_ring_size; dr->rq_db_mmap_key = q->rq_db_key;
	dr->sq_db_mmap_key = q->sq_db_key; dr->llq_desc_mmap_key = q->llq_key;
	dr->send_sub_cq_idx = q->send_sub_cq; dr->recv_sub_cq_idx = q->recv_sub_cq;
	setup_cmd(c, "CREATE_QP", sizeof(*core), sizeof(*r), core->qp_type);
	shim_log("  CREATE_QP type %u caps %u/%u/%u/%u/%u rq_ring %u sq_ring %u driver_type %u -> qpn 0x%x\n", core->qp_type,
		 core->max_send_wr, core->max_recv_wr, core->max_send_sge, core->max_recv_sge, core->max_inline_data,
		 d->rq_ring_size, d->sq_ring_size, d->driver_qp_type, q->qpn);
}

static ssize_t handle(const void *buf, size_t len)
{
	struct shim_cmd c = shim_cmd_decode(buf, len);
	shim_cmd_zero_out(&c);
	uint32_t key = c.ex ? (c.num | 0x100) : c.num;
	switch (key) {
	case IB_USER_VERBS_CMD_GET_CONTEXT: {
		struct ib_uverbs_get_context_resp *r = (void *)c.out;
		struct efa_ibv_alloc_ucontext_resp *d = (void *)(c.out + sizeof(*r));
		const struct efa_ibv_alloc_ucontext_cmd *dc = (const void *)(c.core + sizeof(struct ib_uverbs_get_context));
		r->async_fd = eventfd(0, EFD_CLOEXEC); r->num_comp_vectors = 1;
		d->cmds_supp_udata_mask = EFA_USER_CMDS_SUPP_UDATA_QUERY_DEVICE | EFA_USER_CMDS_SUPP_UDATA_CREATE_AH;
		d->sub_cqs_per_cq = S.sub_cqs_per_cq; d->inline_buf_size = 32; d->max_llq_size = 1 << 16;
		d->max_tx_batch = 0; d->min_sq_wr = 0;
		shim_log("  GET_CONTEXT comp_mask 0x%x\n", dc->comp_mask);
		setup_cmd(&c, "GET_CONTEXT", sizeof(struct ib_uverbs_get_context), sizeof(*r), 0);
		break; }
	case IB_USER_VERBS_CMD_QUERY_DEVICE:
	case 0x100 | IB_USER_VERBS_EX_CMD_QUERY_DEVICE:
		query_device(&c); break;
	case IB_USER_VERBS_CMD_QUERY_PORT: {
		struct ib_uverbs_query_port_resp *r = (void *)c.out;
		r->max_msg_sz = 8928; r->gid_tbl_len = 1; r->pkey_tbl_len = 1; r->state = 4; r->max_mtu = 4; r->active_mtu = 4;
		r->phys_state = 5; r->link_layer = 0; r->active_width = 2; r->active_speed = 32;
		break; }
	case IB_USER_VERBS_CMD_ALLOC_PD: {
		((struct ib_uverbs_alloc_pd_resp *)c.out)->pd_handle = next_handle++;
		((struct efa_ibv_alloc_pd_resp *)(c.out + sizeof(struct ib_uverbs_alloc_pd_resp)))->pdn = 3;
		setup_cmd(&c, "ALLOC_PD", sizeof(struct ib_uverbs_alloc_pd), sizeof(struct ib_uverbs_alloc_pd_resp), 0);
		break; }
	case IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL:
		((struct ib_uverbs_create_comp_channel_resp *)c.out)->fd = eventfd(0, EFD_CLOEXEC); break;
	case IB_USER_VERBS_CMD_CREATE_CQ:
	case 0x100 | IB_USER_VERBS_EX_CMD_CREATE_CQ: create_cq(&c); break;
	case IB_USER_VERBS_CMD_CREATE_QP: create_qp(&c); break;
	case IB_USER_VERBS_CMD_CREATE_AH: {
		((struct ib_uverbs_create_ah_resp *)c.out)->ah_handle = next_handle++;
		((struct efa_ibv_create_ah_resp *)(c.out + sizeof(struct ib_uverbs_create_ah_resp)))->efa_address_handle = 0x0abc;
		setup_cmd(&c, "CREATE_AH", sizeof(struct ib_uverbs_create_ah), sizeof(struct ib_uverbs_create_ah_resp), 0);
		break; }
	case IB_USER_VERBS_CMD_DESTROY_AH: return len;
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
