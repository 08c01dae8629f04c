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

/* WR n sits at SQ index n (mod the ring) */
static inline void peer_complete(uint64_t n) { kern_complete(&K, (uint32_t)n, n); }

/* hot_loop_bw, hot_loop_lat */
#include "../../../support/oracle/hotpath_loops.h"

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "bw";
	uint64_t iters = argc > 2 ? strtoull(argv[2], NULL, 0) : 2000000;
	int bw = !strcmp(which, "bw");
	if (!bw && strcmp(which, "lat")) die("case must be bw or lat");
	if (bw) { iters -= iters % CQ_MOD; if (!iters) iters = CQ_MOD; }
	struct shim_state *S = shim_state();

	struct hotpath_objs h; struct ibv_qp_init_attr ia;
	hotpath_open(&h, &ia);
	qp = ibv_create_qp(h.pd, &ia);
	if (!qp) die("ibv_create_qp");
	hotpath_to_rts(IBV_MTU_1024, 0x12, 1);

	if (!S->last_cq || !S->last_sq || !S->last_cq->mapped || !S->last_sq->mapped) die("rings not mapped by librxe");
	K.sq = S->last_sq->buf; K.cq = S->last_cq->buf;
	K.sq_mask = ((struct rxe_queue_buf *)K.sq)->index_mask; K.cq_mask = ((struct rxe_queue_buf *)K.cq)->index_mask;
	K.cq_log2 = ((struct rxe_queue_buf *)K.cq)->log2_elem_size; K.cq_pi = 0;
	struct ib_uverbs_wc t; memset(&t, 0, sizeof t);
	t.status = 0; t.opcode = IB_UVERBS_WC_RDMA_WRITE; t.byte_len = MSG_SIZE; t.qp_num = qp->qp_num; t.port_num = 1;
	memcpy(K.tmpl, (uint8_t *)&t + 8, sizeof K.tmpl);

	double ns = hotpath_time(bw ? hot_loop_bw : hot_loop_lat, iters);
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
	hotpath_close(&h);
	return 0;
}
