/* rxe hot-path microbenchmark, librxe side: Debian's libibverbs/librxe (rdma-core 44) against
 * the fake rxe kernel of shim.c (LD_PRELOAD), timing ibv_post_send (one 64-B RDMA WRITE WQE into
 * the mmap'd SQ ring + the POST_SEND doorbell write(), answered by the shim without a syscall) and
 * ibv_poll_cq (one CQE from the mmap'd CQ ring). The harness plays the kernel: after each
 * signaled post it consumes the SQ (consumer_index store, release) and writes a completion
 * (struct ib_uverbs_wc) into the CQ ring, then publishes it (producer_index store, release):
 * kern_complete, the same stores as Kern::complete in providers/examples/rxe_hotpath_cmp.rs.
 * Own code; uses only the public verbs API and the uAPI headers.
 *
 * usage: rxehotpath bw|lat [ITERS]     (bw: ITERS is rounded down to a multiple of CQ_MOD)
 * Prints one line: "case=.. iters=.. ns_per_op=.. completions=.. sq_pi=.. last_wr_id=.. wqe_hash=..". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_user_rxe.h>
#include "shim.h"

#define TX_DEPTH 128   /* perftest bw default */
#define CQ_MOD 100     /* perftest bw default: one signaled WR per 100 */
#define POLL_BATCH 16  /* perftest CTX_POLL_BATCH */
#define MSG_SIZE 64
#define REMOTE_VA 0x00007f0012340000ULL
#define RKEY 0x0000abcdU

/* ---- the kernel role ---- */
struct kern {
	uint8_t *sq, *cq;          /* the rings' struct rxe_queue_buf */
	uint32_t sq_mask, cq_mask, cq_log2, cq_pi;
	uint64_t tmpl[5];          /* ib_uverbs_wc bytes 8..47: status 0, opcode RDMA_WRITE, byte_len, qp_num, port_num 1 */
};
static struct kern K;

/* The kernel completes the signaled WQE at sq index `idx`: it has consumed the SQ up to and
 * including it (consumer_index = idx + 1, release), then writes the 48-byte completion (6 x
 * 8-byte stores: wr_id, then the template) into the CQ slot at its producer index and publishes
 * it (producer_index, release). Identical to Kern::complete in rxe_hotpath_cmp.rs. */
static inline void kern_complete(struct kern *k, uint32_t idx, uint64_t wr_id)
{
	__atomic_store_n((uint32_t *)(k->sq + offsetof(struct rxe_queue_buf, consumer_index)), (idx + 1) & k->sq_mask, __ATOMIC_RELEASE);
	volatile uint64_t *w = (volatile uint64_t *)(k->cq + sizeof(struct rxe_queue_buf) + ((size_t)k->cq_pi << k->cq_log2));
	w[0] = wr_id;
	for (int i = 0; i < 5; i++) w[1 + i] = k->tmpl[i];
	k->cq_pi = (k->cq_pi + 1) & k->cq_mask;
	__atomic_store_n((uint32_t *)(k->cq + offsetof(struct rxe_queue_buf, producer_index)), k->cq_pi, __ATOMIC_RELEASE);
}

static struct ibv_qp *qp; static struct ibv_cq *cq; static struct ibv_mr *mr;
static uint8_t *data;
static uint64_t completions, last_wr_id;

static void die(const char *m) { fprintf(stderr, "rxehotpath: %s\n", m); exit(1); }

/* perftest's BW loop (run_iter_bw): post while fewer than TX_DEPTH outstanding, one WR in CQ_MOD
 * signaled, poll a batch of POLL_BATCH, each completion retires CQ_MOD WRs. */
__attribute__((noinline)) void hot_loop_bw(uint64_t iters)
{
	struct ibv_sge sge = { .addr = (uintptr_t)data, .length = MSG_SIZE, .lkey = mr->lkey };
	struct ibv_send_wr wr, *bad;
	memset(&wr, 0, sizeof wr);
	wr.sg_list = &sge; wr.num_sge = 1; wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = REMOTE_VA; wr.wr.rdma.rkey = RKEY;
	struct ibv_wc wc[POLL_BATCH];
	uint64_t scnt = 0, ccnt = 0;
	while (scnt < iters || ccnt < iters) {
		while (scnt < iters && scnt - ccnt < TX_DEPTH) {
			int sig = scnt % CQ_MOD == CQ_MOD - 1;
			wr.wr_id = scnt;
			wr.send_flags = sig ? IBV_SEND_SIGNALED : 0;
			if (ibv_post_send(qp, &wr, &bad)) die("post_send");
			if (sig) kern_complete(&K, (uint32_t)scnt, scnt);
			scnt++;
		}
		if (ccnt < iters) {
			int ne = ibv_poll_cq(cq, POLL_BATCH, wc);
			if (ne < 0) die("poll_cq");
			for (int i = 0; i < ne; i++) {
				if (wc[i].status != IBV_WC_SUCCESS) die("completion status");
				last_wr_id = wc[i].wr_id;
			}
			completions += ne; ccnt += (uint64_t)ne * CQ_MOD;
		}
	}
}

/* a latency loop: every WR signaled, the kernel completes it, poll_cq(cq, 1) until it is seen */
__attribute__((noinline)) void hot_loop_lat(uint64_t iters)
{
	struct ibv_sge sge = { .addr = (uintptr_t)data, .length = MSG_SIZE, .lkey = mr->lkey };
	struct ibv_send_wr wr, *bad;
	memset(&wr, 0, sizeof wr);
	wr.sg_list = &sge; wr.num_sge = 1; wr.opcode = IBV_WR_RDMA_WRITE; wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = REMOTE_VA; wr.wr.rdma.rkey = RKEY;
	struct ibv_wc wc;
	for (uint64_t i = 0; i < iters; i++) {
		wr.wr_id = i;
		if (ibv_post_send(qp, &wr, &bad)) die("post_send");
		kern_complete(&K, (uint32_t)i, i);
		int ne;
		do ne = ibv_poll_cq(cq, 1, &wc); while (ne == 0);
		if (ne < 0 || wc.status != IBV_WC_SUCCESS) die("poll_cq");
		last_wr_id = wc.wr_id; completions++;
	}
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "bw";
	uint64_t iters = argc > 2 ? strtoull(argv[2], NULL, 0) : 2000000;
	int bw = !strcmp(which, "bw");
	if (!bw && strcmp(which, "lat")) die("case must be bw or lat");
	if (bw) { iters -= iters % CQ_MOD; if (!iters) iters = CQ_MOD; }
	struct shim_state *S = shim_state();

	if (posix_memalign((void **)&data, 4096, 8192)) die("buffer");
	memset(data, 0x5a, 8192);
	int n; struct ibv_device **l = ibv_get_device_list(&n);
	if (!l || !n) die("no device (run through run.sh: LD_PRELOAD shim + SYSFS_PATH)");
	struct ibv_context *ctx = ibv_open_device(l[0]);
	if (!ctx) die("ibv_open_device");
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	mr = pd ? ibv_reg_mr(pd, data, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) : NULL;
	if (!pd || !mr) die("pd/mr");
	cq = ibv_create_cq(ctx, TX_DEPTH * 2, NULL, NULL, 0);
	if (!cq) die("cq");
	struct ibv_qp_init_attr ia; memset(&ia, 0, sizeof ia);
	ia.qp_type = IBV_QPT_RC; ia.send_cq = cq; ia.recv_cq = cq;
	ia.cap.max_send_wr = TX_DEPTH; ia.cap.max_recv_wr = 16; ia.cap.max_send_sge = 1; ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 0;
	qp = ibv_create_qp(pd, &ia);
	if (!qp) die("ibv_create_qp");
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) die("INIT");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR; a.path_mtu = IBV_MTU_1024; a.dest_qp_num = 0x12; a.rq_psn = 0x111; a.max_dest_rd_atomic = 16; a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1; a.ah_attr.port_num = 1; a.ah_attr.grh.sgid_index = 1; a.ah_attr.grh.hop_limit = 64;
	uint8_t dgid[16] = {0,0,0,0,0,0,0,0,0,0,0xff,0xff,192,168,1,2}; memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) die("RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS; a.sq_psn = 0x222; a.timeout = 14; a.retry_cnt = 7; a.rnr_retry = 7; a.max_rd_atomic = 16;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)) die("RTS");

	if (!S->last_cq || !S->last_sq || !S->last_cq->mapped || !S->last_sq->mapped) die("rings not mapped by librxe");
	K.sq = S->last_sq->buf; K.cq = S->last_cq->buf;
	K.sq_mask = ((struct rxe_queue_buf *)K.sq)->index_mask; K.cq_mask = ((struct rxe_queue_buf *)K.cq)->index_mask;
	K.cq_log2 = ((struct rxe_queue_buf *)K.cq)->log2_elem_size; K.cq_pi = 0;
	struct ib_uverbs_wc t; memset(&t, 0, sizeof t);
	t.status = 0; t.opcode = IB_UVERBS_WC_RDMA_WRITE; t.byte_len = MSG_SIZE; t.qp_num = qp->qp_num; t.port_num = 1;
	memcpy(K.tmpl, (uint8_t *)&t + 8, sizeof K.tmpl);

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (bw) hot_loop_bw(iters); else hot_loop_lat(iters);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	uint32_t sq_pi = __atomic_load_n(&((struct rxe_queue_buf *)K.sq)->producer_index, __ATOMIC_ACQUIRE);
	/* FNV-1a of the last WQE posted (its first 224 bytes: struct rxe_send_wqe + one rxe_sge),
	 * skipping the SGE address (208..215, a heap address of this process) and ssn (176..179:
	 * librxe stores a per-QP send sequence number there, ours leaves the 0 it found) */
	const uint8_t *last = K.sq + sizeof(struct rxe_queue_buf) + ((size_t)((sq_pi - 1) & K.sq_mask) << S->last_sq->log2_elem);
	uint64_t wqe_hash = 0xcbf29ce484222325ULL;
	for (int i = 0; i < 224; i++) if ((i < 176 || i >= 180) && (i < 208 || i >= 216)) { wqe_hash ^= last[i]; wqe_hash *= 0x100000001b3ULL; }
	if (getenv("HOTPATH_DUMP_WQE")) { /* the WQE bytes, 16 per line, to compare with ours */
		for (int i = 0; i < 224; i++) fprintf(stderr, "%02x%s", last[i], i % 16 == 15 ? "\n" : " ");
	}
	printf("case=%s iters=%llu ns_per_op=%.2f completions=%llu sq_pi=%u last_wr_id=%llu wqe_hash=%016llx impl=librxe sq_slots=%u sq_elem=%u cq_slots=%u cq_elem=%u qpn=0x%x\n",
	       which, (unsigned long long)iters, ns / iters, (unsigned long long)completions, sq_pi,
	       (unsigned long long)last_wr_id, (unsigned long long)wqe_hash, K.sq_mask + 1, 1u << S->last_sq->log2_elem, K.cq_mask + 1, 1u << K.cq_log2, qp->qp_num);
	ibv_destroy_qp(qp); ibv_destroy_cq(cq); ibv_dereg_mr(mr); ibv_dealloc_pd(pd); ibv_close_device(ctx);
	ibv_free_device_list(l);
	return 0;
}
