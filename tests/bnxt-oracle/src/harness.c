/* bnxt_re oracle harness: drives rdma-core 44's libbnxt_re through the fake kernel (shim.c) with
 * every work request perftest and qperf post (send, send with immediate, inline, RDMA write with
 * and without immediate, read, compare-and-swap, fetch-and-add, receive, SRQ receive, UD send),
 * plays the device by writing completion entries (success, every requester and responder status,
 * terminal, stale, cut-off), and writes one JSON line per event: what was called, which queue
 * bytes changed, which doorbells were rung, what ibv_poll_cq returned.
 * providers/tests/bnxt_re_golden.rs replays the file through our provider. Own code, written
 * from the public verbs API and the bnxt_re device formats (docs/providers.md). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <endian.h>
#include <sys/mman.h>
#include <infiniband/verbs.h>
#include "shim.h"

#define DATA_VA 0x200000000ULL
#define DATA_LEN (1 << 20)
#define FILL 0xa5

static FILE *out;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_mr *mr;
static struct ibv_cq *cq;
static struct ibv_ah *ah;
static uint32_t avid;

struct buf { uint8_t *p, *snap; size_t len; };
struct q { const char *name; struct ibv_qp *qp; struct buf sq, rq; uint32_t posted; int type; uint32_t psn; };
static struct q rc, uc, ud, rcs, rst;
static struct ibv_srq *srq; static struct buf srqb;
static struct buf cqb; static uint32_t cq_pos; static uint32_t cq_depth;

static void die(const char *m) { fprintf(stderr, "bnxt oracle: %s\n", m); exit(1); }

static void hex(const uint8_t *b, size_t n) { fputc('"', out); for (size_t i = 0; i < n; i++) fprintf(out, "%02x", b[i]); fputc('"', out); }

static void buf_init(struct buf *b, void *va)
{
	b->p = va; b->len = shim_anon_len(va);
	if (!b->len) die("queue buffer not found among the anonymous mappings");
	memset(b->p, FILL, b->len);
	b->snap = malloc(b->len); memcpy(b->snap, b->p, b->len);
}

/* the byte runs that changed since the last snapshot, as [offset, "hex"] */
static void diff(const char *key, struct buf *b)
{
	fprintf(out, ",\"%s\":[", key);
	int first = 1;
	for (size_t i = 0; b->p && i < b->len;) {
		if (b->p[i] == b->snap[i]) { i++; continue; }
		size_t j = i; while (j < b->len && (b->p[j] != b->snap[j] || (j + 1 < b->len && b->p[j + 1] != b->snap[j + 1]))) j++;
		fprintf(out, "%s[%zu,", first ? "" : ",", i); hex(b->p + i, j - i); fputc(']', out);
		first = 0; i = j;
	}
	fputc(']', out);
	if (b->p) memcpy(b->snap, b->p, b->len);
}

static void dbs(void)
{
	struct shim_state *S = shim_state();
	fprintf(out, ",\"db\":[");
	for (int i = 0; i < S->ndb; i++) fprintf(out, "%s\"%016llx\"", i ? "," : "", (unsigned long long)S->db[i]);
	fputc(']', out); S->ndb = 0;
}

static struct shim_obj *qp_obj(struct ibv_qp *qp)
{
	struct shim_state *S = shim_state();
	for (int i = 0; i < S->nqp; i++) if (S->qp[i].id == qp->qp_num) return &S->qp[i];
	die("unknown qp"); return NULL;
}

static void make_qp(struct q *q, const char *name, enum ibv_qp_type t, int sig_all, uint32_t inl, struct ibv_srq *s)
{
	struct ibv_qp_init_attr a = { .send_cq = cq, .recv_cq = cq, .srq = s, .qp_type = t, .sq_sig_all = sig_all,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 2, .max_inline_data = inl } };
	struct ibv_qp_cap req = a.cap;
	q->name = name; q->type = t;
	q->qp = ibv_create_qp(pd, &a);
	if (!q->qp) die("ibv_create_qp");
	struct shim_obj *o = qp_obj(q->qp);
	buf_init(&q->sq, (void *)o->va);
	if (o->va2) buf_init(&q->rq, (void *)o->va2);
	fprintf(out, "{\"ev\":\"qp\",\"name\":\"%s\",\"type\":%d,\"sig_all\":%d,\"srq\":%d,\"req\":[%u,%u,%u,%u,%u],"
		"\"qpid\":%u,\"sq_bytes\":%zu,\"rq_bytes\":%zu}\n", name, t, sig_all, s != NULL, req.max_send_wr, req.max_recv_wr,
		req.max_send_sge, req.max_recv_sge, req.max_inline_data, o->id, q->sq.len, q->rq.len);
}

static void modify(struct q *q, struct ibv_qp_attr *a, int mask)
{
	if (ibv_modify_qp(q->qp, a, mask)) die("ibv_modify_qp");
	fprintf(out, "{\"ev\":\"modify\",\"qp\":\"%s\",\"state\":%d", q->name, a->qp_state);
	if (mask & IBV_QP_SQ_PSN) fprintf(out, ",\"sq_psn\":%u", a->sq_psn);
	if (mask & IBV_QP_PATH_MTU) fprintf(out, ",\"path_mtu\":%d", a->path_mtu);
	fprintf(out, "}\n");
}

static void to_rts(struct q *q)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	modify(q, &a, IBV_QP_STATE);
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11111111,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC };
	modify(q, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | (q->type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS));
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024, .dest_qp_num = 0x77, .rq_psn = 1,
		.max_dest_rd_atomic = 4, .min_rnr_timer = 12, .ah_attr = { .is_global = 1, .port_num = 1, .grh.hop_limit = 64 } };
	modify(q, &a, q->type == IBV_QPT_UD ? IBV_QP_STATE : IBV_QP_STATE | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	       IBV_QP_AV | (q->type == IBV_QPT_RC ? IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER : 0));
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = q->psn, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7, .max_rd_atomic = 4 };
	modify(q, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | (q->type == IBV_QPT_RC ? IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC : 0));
}

static const char *opname(enum ibv_wr_opcode o)
{
	switch (o) {
	case IBV_WR_SEND: return "SEND"; case IBV_WR_SEND_WITH_IMM: return "SEND_WITH_IMM";
	case IBV_WR_RDMA_WRITE: return "RDMA_WRITE"; case IBV_WR_RDMA_WRITE_WITH_IMM: return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_RDMA_READ: return "RDMA_READ"; case IBV_WR_ATOMIC_CMP_AND_SWP: return "ATOMIC_CMP_AND_SWP";
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return "ATOMIC_FETCH_AND_ADD"; default: return "?";
	}
}

static void sges_json(const struct ibv_sge *s, int n)
{
	fprintf(out, "\"sges\":[");
	for (int i = 0; i < n; i++) fprintf(out, "%s[%llu,%u,%u]", i ? "," : "", (unsigned long long)s[i].addr, s[i].length, s[i].lkey);
	fputc(']', out);
}

/* post the n requests of wr[] (linked here), log them with what changed */
static void post_send(struct q *q, struct ibv_send_wr *wr, int n)
{
	for (int i = 0; i < n; i++) wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	struct ibv_send_wr *bad = NULL;
	int r = ibv_post_send(q->qp, wr, &bad);
	int nbad = bad ? (int)(bad - wr) : n;
	if (!r) nbad = n;
	q->posted += nbad;
	fprintf(out, "{\"ev\":\"post_send\",\"qp\":\"%s\",\"ret\":%d,\"bad\":%d,\"wrs\":[", q->name, r, r ? nbad : -1);
	for (int i = 0; i < n; i++) {
		struct ibv_send_wr *w = &wr[i];
		fprintf(out, "%s{\"wr_id\":%llu,\"opcode\":\"%s\",\"flags\":%u,\"imm\":%u,\"raddr\":%llu,\"rkey\":%u,"
			"\"cmp\":%llu,\"swap\":%llu,", i ? "," : "", (unsigned long long)w->wr_id, opname(w->opcode), w->send_flags,
			w->imm_data, (unsigned long long)(q->type == IBV_QPT_UD ? 0 : w->wr.rdma.remote_addr), /* UD: the AH pointer */
			q->type == IBV_QPT_UD ? 0 : w->opcode >= IBV_WR_ATOMIC_CMP_AND_SWP ? w->wr.atomic.rkey : w->wr.rdma.rkey,
			(unsigned long long)(w->opcode >= IBV_WR_ATOMIC_CMP_AND_SWP ? w->wr.atomic.compare_add : 0),
			(unsigned long long)(w->opcode >= IBV_WR_ATOMIC_CMP_AND_SWP ? w->wr.atomic.swap : 0));
		if (q->type == IBV_QPT_UD) fprintf(out, "\"ud\":[%u,%u,%u],", avid, w->wr.ud.remote_qpn, w->wr.ud.remote_qkey);
		sges_json(w->sg_list, w->num_sge); fputc('}', out);
	}
	fputc(']', out); diff("diff", &q->sq); dbs(); fprintf(out, "}\n");
}

static void post_recv(struct q *q, struct ibv_recv_wr *wr, int n)
{
	for (int i = 0; i < n; i++) wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	struct ibv_recv_wr *bad = NULL;
	int r = q ? ibv_post_recv(q->qp, wr, &bad) : ibv_post_srq_recv(srq, wr, &bad);
	fprintf(out, "{\"ev\":\"%s\",\"qp\":\"%s\",\"ret\":%d,\"bad\":%d,\"wrs\":[", q ? "post_recv" : "post_srq_recv",
		q ? q->name : "srq", r, r && bad ? (int)(bad - wr) : -1);
	for (int i = 0; i < n; i++) { fprintf(out, "%s{\"wr_id\":%llu,", i ? "," : "", (unsigned long long)wr[i].wr_id); sges_json(wr[i].sg_list, wr[i].num_sge); fputc('}', out); }
	fputc(']', out); diff("diff", q ? &q->rq : &srqb); dbs(); fprintf(out, "}\n");
}

/* play the device: one completion entry at the CQ's next slot (q NULL: handle 0). Send and
 * terminal entries: a = consumer index. Receive entries: a = length, b = immediate, c = the
 * 8 bytes at 16 (a UD entry's source QP low 16 bits at the top). */
enum { K_SEND = 0, K_RC = 1, K_UD = 2, K_RAW = 3, K_TERM = 0xe, K_COFF = 0xf };
static void cqe(struct q *q, int kind, int status, int flags, uint32_t a, uint32_t b, uint64_t c, uint32_t w1)
{
	uint8_t e[32] = {0};
	uint32_t slot = cq_pos % cq_depth, phase = 1 ^ ((cq_pos / cq_depth) & 1);
	uint64_t handle = q ? qp_obj(q->qp)->handle : 0;
	int hoff = (kind == K_SEND || kind == K_TERM) ? 0 : (kind == K_RC || kind == K_UD) ? 8 : -1;
	if (hoff == 0) memcpy(e + 8, &a, 4);
	else { memcpy(e, &a, 4); memcpy(e + 4, &b, 4); memcpy(e + 16, &c, 8); }
	uint32_t hdr = phase | (kind & 0xf) << 1 | (status & 0xff) << 8 | (flags & 0xffff) << 16;
	memcpy(e + 24, &hdr, 4); memcpy(e + 28, &w1, 4);
	fprintf(out, "{\"ev\":\"cqe\",\"slot\":%u,\"qp\":\"%s\",\"handle_off\":%d,\"bytes\":", slot, q ? q->name : "", q ? hoff : -1);
	hex(e, 32); fprintf(out, "}\n");
	if (q && hoff >= 0) memcpy(e + hoff, &handle, 8);
	memcpy(cqb.p + slot * 32, e, 32); memcpy(cqb.snap + slot * 32, e, 32);
	cq_pos++;
}
/* a send completion retiring everything posted on q so far */
static void send_ok(struct q *q) { cqe(q, K_SEND, 0, 0, q->posted, 0, 0, 0); }

static void field(const char *k, const void *p, size_t n, unsigned long long v, int *first)
{
	const uint8_t *b = p; size_t i = 0; while (i < n && b[i] == 0xee) i++;
	fprintf(out, "%s\"%s\":", *first ? "" : ",", k); *first = 0;
	if (i == n) fprintf(out, "null"); else fprintf(out, "%llu", v);
}

static void (*on_wc)(const struct ibv_wc *);
static int poll(int n)
{
	struct ibv_wc wc[16];
	memset(wc, 0xee, sizeof(wc));
	int r = ibv_poll_cq(cq, n, wc);
	fprintf(out, "{\"ev\":\"poll\",\"n\":%d,\"ret\":%d,\"wcs\":[", n, r);
	for (int i = 0; i < r; i++) {
		struct ibv_wc *w = &wc[i]; int f = 1;
		if (on_wc) on_wc(w);
		fputs(i ? ",{" : "{", out);
#define F(k) field(#k, &w->k, sizeof(w->k), (unsigned long long)w->k, &f)
		F(wr_id); F(status); F(opcode); F(vendor_err); F(byte_len); F(imm_data); F(qp_num); F(src_qp); F(wc_flags);
		F(pkey_index); F(slid); F(sl); F(dlid_path_bits);
		fputc('}', out);
	}
	fputc(']', out); diff("cq_diff", &cqb); dbs(); fprintf(out, "}\n");
	return r;
}

static struct ibv_sge sge(uint64_t off, uint32_t len) { return (struct ibv_sge){ DATA_VA + off, len, mr->lkey }; }
static struct ibv_send_wr swr(uint64_t id, enum ibv_wr_opcode op, struct ibv_sge *s, int n, unsigned flags)
{
	return (struct ibv_send_wr){ .wr_id = id, .opcode = op, .sg_list = s, .num_sge = n, .send_flags = flags,
		.imm_data = htobe32(0x1000 + (uint32_t)id), .wr.rdma = { 0x7f0000001000ULL + id * 64, 0x5eed } };
}

#include "cases.h"

int main(int argc, char **argv)
{
	if (argc != 3) die("usage: bnxtoracle OUT_FILE VARIANT");
	out = fopen(argv[1], "w"); if (!out) die("open output");
	uint8_t *data = mmap((void *)DATA_VA, DATA_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (data != (void *)DATA_VA) die("map data");
	for (int i = 0; i < DATA_LEN; i++) data[i] = (uint8_t)(7 * i + 3);
	struct ibv_device **l = ibv_get_device_list(NULL);
	if (!l || !l[0]) die("no device (is SYSFS_PATH set?)");
	ctx = ibv_open_device(l[0]); if (!ctx) die("ibv_open_device");
	pd = ibv_alloc_pd(ctx); if (!pd) die("ibv_alloc_pd");
	mr = ibv_reg_mr(pd, data, DATA_LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!mr) die("ibv_reg_mr");
	cq = ibv_create_cq(ctx, 15, NULL, NULL, 0); if (!cq) die("ibv_create_cq");
	struct shim_state *S = shim_state();
	buf_init(&cqb, (void *)S->cq[0].va); memset(cqb.p, 0, cqb.len); memcpy(cqb.snap, cqb.p, cqb.len);
	cq_depth = 16;
	fprintf(out, "{\"ev\":\"setup\",\"variant\":\"%s\",\"chip\":\"%s\",\"mode\":\"%s\",\"cqe\":15,\"cqid\":%u,\"cq_bytes\":%zu,"
		"\"lkey\":%u,\"data_va\":%llu}\n", argv[2], getenv("SHIM_CHIP") ? getenv("SHIM_CHIP") : "0x16d7",
		getenv("SHIM_MODE") ? getenv("SHIM_MODE") : "", S->cq[0].id, cqb.len, mr->lkey, DATA_VA);
	const char *seed = getenv("BNXT_ORACLE_SEED");
	if (seed) run_random(strtoull(seed, NULL, 0), 600); else run_cases();
	fclose(out);
	return 0;
}
