/* EFA oracle harness: drives Debian's libefa (rdma-core 44) through the fake kernel of shim.c
 * and writes, one JSON line per event, what it wrote (TX descriptors in the LLQ, RX descriptors
 * in the RQ ring, SQ/RQ/CQ doorbell values) and what it reported for completions the harness
 * wrote in the device's place. UD (ibv_create_qp) and SRD (efadv_create_qp_ex) QPs; sends from
 * a scatter list, inline, with immediate, RDMA read (SRD, ibv_wr_* API: the device reports the
 * RDMA read cap); receives of one and two SGEs; every completion status.
 * Usage: harness OUT.jsonl [SEED STEPS]: with a seed, STEPS random posts and completions instead
 * (any request kind on either QP, completions of random outstanding requests in random order with
 * random statuses, lengths and immediates), then every outstanding request completed.
 * harness OUT.jsonl events: the CQ has a completion channel (the fake device must report CQ
 * notifications: SHIM_CAPS); rounds of arm (ibv_req_notify_cq), a send and its completion, a
 * completion event read from the channel (ibv_get_cq_event: libefa counts it in cmd_sn) and its
 * ack, recording each CQ doorbell value; and libefa's answer to a solicited-only arm. Own code, written from verbs.h, efadv.h and efa-abi.h. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <infiniband/efadv.h>
#include "shim.h"

static FILE *out;
static void die(const char *what) { fprintf(stderr, "efa-oracle: %s failed\n", what); exit(1); }
static void hex(const void *p, size_t n)
{
	const uint8_t *b = p; fputc('"', out);
	for (size_t i = 0; i < n; i++) fprintf(out, "%02x", b[i]);
	fputc('"', out);
}

struct q { const char *name; struct ibv_qp *qp; struct shim_qp *s; uint32_t sq_cnt, rq_desc_cnt; };
static struct ibv_cq *cq; static struct shim_cq *scq; static struct ibv_ah *ah;
static uint32_t sub_next[2];       /* the next entry the "device" writes in each sub-CQ */
static uint8_t sub_phase[2] = {1, 1};

static uint8_t *llq(struct q *q) { return (uint8_t *)shim_map_of(q->s->llq_key) + q->s->llq_off; }
static uint32_t sq_db(struct q *q) { return *(volatile uint32_t *)((uint8_t *)shim_map_of(q->s->sq_db_key) + q->s->sq_db_off); }
static uint32_t rq_db(struct q *q) { return *(volatile uint32_t *)((uint8_t *)shim_map_of(q->s->rq_db_key) + q->s->rq_db_off); }
static uint32_t cq_db(void) { return *(volatile uint32_t *)((uint8_t *)shim_map_of(scq->db_key) + scq->db_off); }
static struct ibv_comp_channel *chan;

/* SGEs as [addr, length, lkey]; an inline send's addresses are process memory, so they are given
 * as 0 and its bytes follow as "inline_data" */
static void sges_json(const struct ibv_sge *s, int n, int inl)
{
	fprintf(out, "\"sges\":[");
	for (int i = 0; i < n; i++) fprintf(out, "%s[%llu,%u,%u]", i ? "," : "", inl ? 0ULL : (unsigned long long)s[i].addr, s[i].length, s[i].lkey);
	fprintf(out, "]");
	if (!inl) return;
	fprintf(out, ",\"inline_data\":\"");
	for (int i = 0; i < n; i++)
		for (uint32_t j = 0; j < s[i].length; j++) fprintf(out, "%02x", ((const uint8_t *)(uintptr_t)s[i].addr)[j]);
	fprintf(out, "\"");
}

/* the descriptor a post just wrote: the slot before the SQ doorbell's producer counter */
static void tx_line(struct q *q, const char *op, uint64_t wr_id, const struct ibv_sge *s, int n, int inl, uint32_t imm,
		    uint64_t raddr, uint32_t rkey)
{
	uint32_t pc = sq_db(q), slot = (pc - 1) & (q->sq_cnt - 1);
	fprintf(out, "{\"ev\":\"send\",\"qp\":\"%s\",\"op\":\"%s\",\"wr_id\":%llu,\"inline\":%d,\"imm\":%u,\"remote_addr\":%llu,\"rkey\":%u,",
		q->name, op, (unsigned long long)wr_id, inl, imm, (unsigned long long)raddr, rkey);
	sges_json(s, n, inl);
	fprintf(out, ",\"ah\":%u,\"remote_qpn\":%u,\"qkey\":%u,\"slot\":%u,\"sq_db\":%u,\"wqe\":", 0x0abc, 0x77, 0x11111111, slot, pc);
	hex(llq(q) + slot * 64, 64);
	fprintf(out, "}\n");
}

static void post_send(struct q *q, enum ibv_wr_opcode opc, uint64_t wr_id, struct ibv_sge *s, int n, int inl, uint32_t imm)
{
	struct ibv_send_wr wr = { .wr_id = wr_id, .sg_list = s, .num_sge = n, .opcode = opc,
				  .send_flags = IBV_SEND_SIGNALED | (inl ? IBV_SEND_INLINE : 0), .imm_data = htobe32(imm) };
	wr.wr.ud.ah = ah; wr.wr.ud.remote_qpn = 0x77; wr.wr.ud.remote_qkey = 0x11111111;
	struct ibv_send_wr *bad;
	if (ibv_post_send(q->qp, &wr, &bad)) die("ibv_post_send");
	tx_line(q, opc == IBV_WR_SEND ? "send" : "send_imm", wr_id, s, n, inl, imm, 0, 0);
}

static void post_read(struct q *q, uint64_t wr_id, struct ibv_sge *s)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(q->qp);
	ibv_wr_start(x);
	x->wr_id = wr_id; x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(x, 0x5566, 0x1000200030004000ULL);
	ibv_wr_set_sge(x, s->lkey, s->addr, s->length);
	ibv_wr_set_ud_addr(x, ah, 0x77, 0x11111111);
	if (ibv_wr_complete(x)) die("ibv_wr_complete");
	tx_line(q, "read", wr_id, s, 1, 0, 0, 0x1000200030004000ULL, 0x5566);
}

static void post_recv(struct q *q, uint64_t wr_id, struct ibv_sge *s, int n)
{
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = s, .num_sge = n }, *bad;
	uint32_t before = rq_db(q);
	if (ibv_post_recv(q->qp, &wr, &bad)) die("ibv_post_recv");
	uint32_t pc = rq_db(q);
	fprintf(out, "{\"ev\":\"recv\",\"qp\":\"%s\",\"wr_id\":%llu,", q->name, (unsigned long long)wr_id);
	sges_json(s, n, 0);
	fprintf(out, ",\"rq_db\":%u,\"descs\":[", pc);
	uint8_t *ring = shim_map_of(q->s->rq_key);
	for (uint32_t i = before; i != pc; i++) {
		if (i != before) fputc(',', out);
		hex(ring + (i & (q->rq_desc_cnt - 1)) * 16, 16);
	}
	fprintf(out, "]}\n");
}

/* the "device" completes request req_id of q's send (sub-CQ 0) or receive queue (sub-CQ 1) */
static void complete(struct q *q, int recv, uint16_t req_id, uint8_t status, uint16_t length, int with_imm, uint32_t imm)
{
	uint8_t e[16] = {0};
	int sub = recv ? q->s->recv_sub_cq : q->s->send_sub_cq;
	memcpy(e, &req_id, 2); e[2] = status;
	e[3] = sub_phase[sub] | ((recv ? 2 : 1) << 1) | (with_imm ? 8 : 0);
	uint16_t qpn = q->s->qpn; memcpy(e + 4, &qpn, 2); memcpy(e + 6, &length, 2);
	if (recv) { uint16_t a = 0x0abc, src = 0x77; memcpy(e + 8, &a, 2); memcpy(e + 10, &src, 2); memcpy(e + 12, &imm, 4); }
	uint32_t idx = sub_next[sub] & (scq->cqe - 1);
	uint8_t *slot = (uint8_t *)shim_map_of(scq->key) + ((size_t)sub * scq->cqe + idx) * scq->entry_size;
	memcpy(slot + 4, e + 4, 12); memcpy(slot, e, 3);
	__atomic_store_n(slot + 3, e[3], __ATOMIC_RELEASE);  /* the phase last, as the device does */
	if (++sub_next[sub] % scq->cqe == 0) sub_phase[sub] ^= 1;
	struct ibv_wc wc;
	memset(&wc, 0, sizeof(wc));  /* libefa leaves the fields a completion kind has not untouched */
	int n = ibv_poll_cq(cq, 1, &wc);
	if (n != 1) die("ibv_poll_cq");
	fprintf(out, "{\"ev\":\"poll\",\"qp\":\"%s\",\"sub\":%d,\"index\":%u,\"cdesc\":", q->name, sub, idx);
	hex(e, 16);
	fprintf(out, ",\"wr_id\":%llu,\"status\":%d,\"opcode\":%d,\"vendor_err\":%u,\"byte_len\":%u,\"imm_data\":%u,\"qp_num\":%u,"
		"\"src_qp\":%u,\"wc_flags\":%u,\"slid\":%u,\"sl\":%u,\"cq_db\":%u}\n", (unsigned long long)wc.wr_id, wc.status,
		wc.opcode, wc.vendor_err, wc.byte_len, be32toh(wc.imm_data), wc.qp_num, wc.src_qp, wc.wc_flags, wc.slid, wc.sl, cq_db());
}

static void to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = 0x11111111 };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY)) die("modify INIT");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE)) die("modify RTR");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0 };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN)) die("modify RTS");
}

/* ---------- random sequences (the differential run) ---------- */
static uint64_t rng = 1;
static uint32_t rnd(uint32_t n) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return (uint32_t)(rng % n); }

/* what is outstanding on one queue: request ids as libefa wrote them into the descriptors */
struct outq { uint16_t id[64]; int n; };
static void out_add(struct outq *o, uint16_t id) { o->id[o->n++] = id; }
static uint16_t out_take(struct outq *o) { int i = rnd(o->n); uint16_t id = o->id[i]; o->id[i] = o->id[--o->n]; return id; }
static uint16_t sent_id(struct q *q) { uint16_t id; uint32_t slot = (sq_db(q) - 1) & (q->sq_cnt - 1); memcpy(&id, llq(q) + slot * 64, 2); return id; }
static uint16_t recv_id(struct q *q, uint32_t before) { uint16_t id; memcpy(&id, (uint8_t *)shim_map_of(q->s->rq_key) + (before & (q->rq_desc_cnt - 1)) * 16 + 8, 2); return id; }

static void random_run(struct q *qs, uint32_t steps, char *data)
{
	struct outq sends[2] = {{{0}, 0}, {{0}, 0}}, recvs[2] = {{{0}, 0}, {{0}, 0}};
	uint32_t rq_wqes[2] = { 4, 2 }, max_sge[2] = { 2, 1 };
	uint64_t wr_id = 1000;
	for (uint32_t step = 0; step < steps || sends[0].n + sends[1].n + recvs[0].n + recvs[1].n; step++) {
		int k = rnd(2); struct q *q = &qs[k]; uint32_t r = step < steps ? rnd(10) : 9;
		if (r < 4 && sends[k].n < (int)q->sq_cnt) {
			struct ibv_sge s[2]; int n = 1 + rnd(max_sge[k]); uint32_t kind = rnd(k ? 4 : 3);
			for (int i = 0; i < n; i++) s[i] = (struct ibv_sge){ ((uint64_t)rnd(1 << 30) << 20) | rnd(1 << 20), 1 + rnd(1 << 16), rnd(1 << 24) };
			if (kind == 3) { post_read(q, wr_id++, s); }
			else if (kind == 2) {
				uint32_t tot = 1 + rnd(32), a = n == 2 ? rnd(tot + 1) : tot;
				s[0] = (struct ibv_sge){ (uintptr_t)data + rnd(8), a, 1 }; s[1] = (struct ibv_sge){ (uintptr_t)data + 16 + rnd(8), tot - a, 1 };
				post_send(q, IBV_WR_SEND, wr_id++, s, n, 1, 0);
			} else post_send(q, kind ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, wr_id++, s, n, 0, (uint32_t)rng);
			out_add(&sends[k], sent_id(q));
		} else if (r < 6 && recvs[k].n < (int)rq_wqes[k]) {
			struct ibv_sge s[2]; int n = 1 + rnd(max_sge[k]);
			for (int i = 0; i < n; i++) s[i] = (struct ibv_sge){ ((uint64_t)rnd(1 << 30) << 20) | rnd(1 << 20), 1 + rnd(1 << 16), rnd(1 << 24) };
			uint32_t before = rq_db(q);
			post_recv(q, wr_id++, s, n);
			out_add(&recvs[k], recv_id(q, before));
		} else {
			int recv = rnd(2); struct outq *o = recv ? &recvs[k] : &sends[k];
			if (!o->n) { recv = !recv; o = recv ? &recvs[k] : &sends[k]; }
			if (!o->n) continue;
			uint8_t st = rnd(4) ? 0 : rnd(15);
			complete(q, recv, out_take(o), st, recv ? rnd(1 << 16) : 0, recv && rnd(2), (uint32_t)rng);
		}
	}
}

/* the events run: arm, a send completed and polled, an event read and acked, six times (the
 * two-bit cmd_sn wraps); then a solicited-only arm, which libefa refuses */
static void events_run(struct q *srd, struct ibv_sge *s)
{
	for (int round = 0; round < 6; round++) {
		int ret = ibv_req_notify_cq(cq, 0);
		fprintf(out, "{\"ev\":\"arm\",\"solicited\":0,\"ret\":%d,\"cq_db\":%u}\n", ret, cq_db());
		post_send(srd, IBV_WR_SEND, 500 + round, s, 1, 0, 0);
		complete(srd, 0, 0, 0, 0, 0, 0);
		/* the kernel's event: the CQ's user handle on the channel (libibverbs set it to the CQ) */
		uint64_t handle = (uintptr_t)cq;
		if (write(chan->fd, &handle, sizeof(handle)) != sizeof(handle)) die("event write");
		struct ibv_cq *ev_cq; void *ev_ctx;
		if (ibv_get_cq_event(chan, &ev_cq, &ev_ctx) || ev_cq != cq) die("ibv_get_cq_event");
		ibv_ack_cq_events(cq, 1);
		fprintf(out, "{\"ev\":\"event\"}\n");
	}
	int ret = ibv_req_notify_cq(cq, 1);
	fprintf(out, "{\"ev\":\"arm\",\"solicited\":1,\"ret\":%d,\"cq_db\":%u}\n", ret, cq_db());
}

int main(int argc, char **argv)
{
	int events = argc == 3 && !strcmp(argv[2], "events") && getenv("SHIM_CAPS");
	if (argc != 2 && argc != 4 && !events) { fprintf(stderr, "usage: harness OUT.jsonl [SEED STEPS | events]\n"); return 2; }
	out = fopen(argv[1], "w"); if (!out) die("fopen");
	int n; struct ibv_device **list = ibv_get_device_list(&n);
	if (!list || n < 1) die("ibv_get_device_list");
	struct ibv_context *ctx = ibv_open_device(list[0]); if (!ctx) die("ibv_open_device");
	struct ibv_pd *pd = ibv_alloc_pd(ctx); if (!pd) die("ibv_alloc_pd");
	if (events && !(chan = ibv_create_comp_channel(ctx))) die("ibv_create_comp_channel");
	cq = ibv_create_cq(ctx, 16, NULL, chan, 0); if (!cq) die("ibv_create_cq");
	scq = &shim_state()->cq[0];
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	aa.grh.dgid.raw[15] = 1;
	ah = ibv_create_ah(pd, &aa); if (!ah) die("ibv_create_ah");
	struct efadv_device_attr da; memset(&da, 0, sizeof(da));
	if (efadv_query_device(ctx, &da, sizeof(da))) die("efadv_query_device");
	fprintf(out, "{\"ev\":\"device\",\"max_sq_wr\":%u,\"max_rq_wr\":%u,\"max_sq_sge\":%u,\"max_rq_sge\":%u,\"inline_buf_size\":%u,"
		"\"device_caps\":%u,\"max_rdma_size\":%u,\"sub_cqs\":%u,\"cqe\":%u,\"cq_entry_size\":%u%s%s}\n", da.max_sq_wr, da.max_rq_wr,
		da.max_sq_sge, da.max_rq_sge, da.inline_buf_size, da.device_caps, da.max_rdma_size, scq->num_sub_cqs, scq->cqe, scq->entry_size,
		events ? ",\"channel\":1,\"kernel_caps\":" : "", events ? getenv("SHIM_CAPS") : "");

	struct ibv_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 2, .max_recv_sge = 2, .max_inline_data = 32 } };
	struct q ud = { "ud", ibv_create_qp(pd, &ia), NULL, 4, 8 };
	if (!ud.qp) die("ibv_create_qp UD");
	ud.s = &shim_state()->qp[0];
	struct ibv_qp_init_attr_ex ix = { .send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_DRIVER, .pd = pd,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_READ,
		.cap = { .max_send_wr = 8, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1, .max_inline_data = 32 } };
	struct efadv_qp_init_attr ex = { .driver_qp_type = EFADV_QP_DRIVER_TYPE_SRD };
	struct q srd = { "srd", efadv_create_qp_ex(ctx, &ix, &ex, sizeof(ex)), NULL, 8, 2 };
	if (!srd.qp) die("efadv_create_qp_ex SRD");
	srd.s = &shim_state()->qp[1];
	fprintf(out, "{\"ev\":\"qps\",\"ud\":{\"qpn\":%u,\"sq_ring\":%u,\"rq_ring\":%u,\"type\":%u},\"srd\":{\"qpn\":%u,\"sq_ring\":%u,\"rq_ring\":%u,\"type\":%u}}\n",
		ud.s->qpn, ud.s->sq_ring_size, ud.s->rq_ring_size, ud.s->driver_qp_type,
		srd.s->qpn, srd.s->sq_ring_size, srd.s->rq_ring_size, srd.s->driver_qp_type);
	to_rts(ud.qp); to_rts(srd.qp);
	static char data[64] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!?";
	if (argc == 4) {
		struct q qs[2] = { ud, srd };
		rng = strtoull(argv[2], NULL, 0) | 1;
		random_run(qs, strtoul(argv[3], NULL, 0), data);
		fclose(out);
		return 0;
	}

	struct ibv_sge s1[2] = { { 0x1122334455660000ULL, 4096, 0x00abcdef }, { 0x10000, 100, 0x42 } };
	if (events) {
		events_run(&srd, s1);
		fclose(out);
		return 0;
	}
	struct ibv_sge il[2] = { { (uintptr_t)data, 20, 1 }, { (uintptr_t)data + 40, 12, 1 } };
	struct ibv_sge r2[2] = { { 0x7000000000ULL, 2048, 0x31 }, { 0x7000001000ULL, 64, 0x0100032 } };

	/* UD: the four kinds fill the 4-deep SQ; their completions; then every error status */
	post_send(&ud, IBV_WR_SEND, 100, s1, 1, 0, 0);
	post_send(&ud, IBV_WR_SEND, 101, s1, 2, 0, 0);
	post_send(&ud, IBV_WR_SEND, 102, il, 2, 1, 0);
	post_send(&ud, IBV_WR_SEND_WITH_IMM, 103, s1, 1, 0, 0xdeadbeef);
	for (uint16_t i = 0; i < 4; i++) complete(&ud, 0, i, 0, 0, 0, 0);
	post_recv(&ud, 200, r2, 1);
	post_recv(&ud, 201, r2, 2);
	complete(&ud, 1, 1, 0, 1500, 1, 0x01020304);
	complete(&ud, 1, 0, 0, 64, 0, 0);
	for (uint8_t st = 1; st <= 14; st++) {
		post_send(&ud, IBV_WR_SEND, 300 + st, s1, 1, 0, 0);
		complete(&ud, 0, 3, st, 0, 0, 0);   /* the id libefa hands out again: the last one freed */
	}
	post_recv(&ud, 202, r2, 2);
	complete(&ud, 1, 0, 10, 0, 0, 0);   /* id 0: the last one the two receives above freed */

	/* SRD: a send, an inline send, an RDMA read through the ibv_wr_* API, a receive */
	post_send(&srd, IBV_WR_SEND, 400, s1, 1, 0, 0);
	post_send(&srd, IBV_WR_SEND, 401, il, 1, 1, 0);
	post_read(&srd, 402, &s1[0]);
	for (uint16_t i = 0; i < 3; i++) complete(&srd, 0, i, 0, 0, 0, 0);
	post_recv(&srd, 403, r2, 1);
	complete(&srd, 1, 0, 0, 8, 0, 0);
	fclose(out);
	return 0;
}
