/* mlx5 hot-path microbenchmark, libmlx5 side: Debian's libibverbs/libmlx5 (rdma-core 44) against
 * the oracle's fake kernel (tests/mlx5-oracle/crypto/src/shim.c with SHIM_PLAIN_UAR=1, so UAR
 * pages are plain memory), timing ibv_post_send (one 64-B RDMA WRITE WQE + BlueFlame copy) and
 * ibv_poll_cq. The harness plays the device: after each signaled post it writes a requester CQE
 * into the CQ buffer (dev_req_cqe: the same stores as providers/examples/mlx5_hotpath.rs).
 * Own code; uses only the public verbs / mlx5dv API.
 *
 * bw_wr / lat_wr: the same two loops posting through the extended QP API (ibv_qp_ex: ibv_wr_start,
 * ibv_wr_rdma_write, ibv_wr_set_sge, ibv_wr_complete), which C perftest 6.x uses by default on mlx5;
 * the QP is then created with ibv_create_qp_ex (send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE).
 *
 * usage: mlx5hotpath bw|lat|bw_wr|lat_wr [ITERS]     (bw*: ITERS is rounded down to a multiple of CQ_MOD)
 * Prints one line: "case=.. iters=.. ns_per_op=.. completions=.. sq_pi=.. last_wr_id=..". */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <time.h>
#include <endian.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include "shim.h"

/* ---- the device role: requester CQEs ---- */
struct dev {
	volatile uint8_t *cqbuf; uint32_t ncqe, pi;
	uint64_t tmpl[7];        /* CQE bytes 0..55: srqn_uidx (uidx) at 32, byte_cnt at 44, rest 0 */
	uint32_t sop_drop_qpn;   /* CQE bytes 56..59, memory order: opcode RDMA_WRITE (0x08) << 24 | qpn, BE */
};
static struct dev D;

/* One 64-byte requester CQE (opcode REQ, syndrome-free) for the WQE at wqe_counter, body first,
 * op_own (with the owner bit of this lap) last: 7 x 8-byte + 4 + 2 + 1 stores, compiler barrier,
 * 1-byte store. Identical to dev_req_cqe in providers/examples/mlx5_hotpath.rs. */
static inline void dev_req_cqe(struct dev *d, uint16_t wqe_counter)
{
	volatile uint8_t *s = d->cqbuf + (size_t)(d->pi & (d->ncqe - 1)) * 64;
	volatile uint64_t *w = (volatile uint64_t *)s;
	for (int i = 0; i < 7; i++) w[i] = d->tmpl[i];
	*(volatile uint32_t *)(s + 56) = d->sop_drop_qpn;
	*(volatile uint16_t *)(s + 60) = htobe16(wqe_counter);
	s[62] = 0;
	__asm__ __volatile__("" ::: "memory");
	s[63] = (uint8_t)((MLX5_CQE_REQ << 4) | ((d->pi & d->ncqe) ? 1 : 0));
	d->pi++;
}

static struct ibv_qp *qp; static struct ibv_qp_ex *qpx; static struct ibv_cq *cq; static struct ibv_mr *mr;
static uint8_t *data; static struct mlx5dv_qp dvqp;
static uint64_t completions, last_wr_id;

static void die(const char *m) { fprintf(stderr, "hotpath: %s\n", m); exit(1); }

/* every WQE is one WQEBB: WR n is the WQE at counter n */
static inline void peer_complete(uint64_t n) { dev_req_cqe(&D, (uint16_t)n); }

/* hot_loop_bw, hot_loop_lat (ibv_post_send) */
#include "../../../support/oracle/hotpath_loops.h"

/* one post through the extended QP API: ibv_wr_start .. ibv_wr_complete around the same WR (what
 * perftest does per post when it uses the new post API) */
#define POST_WR(id, flags) do { \
	ibv_wr_start(qpx); \
	qpx->wr_id = (id); \
	qpx->wr_flags = (flags); \
	ibv_wr_rdma_write(qpx, RKEY, REMOTE_VA); \
	ibv_wr_set_sge(qpx, lkey, addr, MSG_SIZE); \
	if (ibv_wr_complete(qpx)) die("wr_complete"); \
} while (0)
#define POST_WR_BW(id, sig) POST_WR(id, (sig) ? IBV_SEND_SIGNALED : 0)
#define POST_WR_LAT(id) POST_WR(id, IBV_SEND_SIGNALED)

/* hot_loop_bw through the extended QP API: the same loop, the same WRs */
__attribute__((noinline)) void hot_loop_bw_wr(uint64_t iters)
{
	uint32_t lkey = mr->lkey; uint64_t addr = (uintptr_t)data;
	HOTPATH_BW_LOOP(iters, POST_WR_BW);
}

/* hot_loop_lat through the extended QP API */
__attribute__((noinline)) void hot_loop_lat_wr(uint64_t iters)
{
	uint32_t lkey = mr->lkey; uint64_t addr = (uintptr_t)data;
	HOTPATH_LAT_LOOP(iters, POST_WR_LAT);
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "bw";
	uint64_t iters = argc > 2 ? strtoull(argv[2], NULL, 0) : 2000000;
	int bw = !strcmp(which, "bw") || !strcmp(which, "bw_wr");
	int use_wr = !strcmp(which, "bw_wr") || !strcmp(which, "lat_wr");
	if (!bw && strcmp(which, "lat") && strcmp(which, "lat_wr")) die("case must be bw, lat, bw_wr or lat_wr");
	if (bw) { iters -= iters % CQ_MOD; if (!iters) iters = CQ_MOD; }
	struct shim_state *S = shim_state();

	struct hotpath_objs h; struct ibv_qp_init_attr ia;
	hotpath_open(&h, &ia);
	if (!use_wr) {
		qp = ibv_create_qp(h.pd, &ia);
		if (!qp) die("ibv_create_qp");
	} else {
		/* the same QP, created through the extended call with the send ops the wr loops use */
		struct ibv_qp_init_attr_ex iax; memset(&iax, 0, sizeof iax);
		iax.qp_type = ia.qp_type; iax.send_cq = ia.send_cq; iax.recv_cq = ia.recv_cq; iax.cap = ia.cap;
		iax.pd = h.pd; iax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		iax.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
		qp = ibv_create_qp_ex(h.ctx, &iax);
		if (!qp) die("ibv_create_qp_ex");
		qpx = ibv_qp_to_qp_ex(qp);
		if (!qpx) die("ibv_qp_to_qp_ex");
	}
	hotpath_to_rts(IBV_MTU_4096, 0x000b2d, 3);

	struct mlx5dv_cq dvcq; struct mlx5dv_obj o; memset(&o, 0, sizeof o);
	o.cq.in = cq; o.cq.out = &dvcq; o.qp.in = qp; o.qp.out = &dvqp;
	if (mlx5dv_init_obj(&o, MLX5DV_OBJ_CQ | MLX5DV_OBJ_QP)) die("mlx5dv_init_obj");
	if (dvcq.cqe_size != 64) die("expected 64-byte CQEs");
	D.cqbuf = dvcq.buf; D.ncqe = dvcq.cqe_cnt; D.pi = 0;
	uint8_t t[56]; memset(t, 0, sizeof t);
	uint32_t uidx_be = htobe32(S->qp[S->nqp - 1].uidx), bc_be = htobe32(MSG_SIZE);
	memcpy(t + 32, &uidx_be, 4); memcpy(t + 44, &bc_be, 4);
	memcpy(D.tmpl, t, sizeof t);
	D.sop_drop_qpn = htobe32((0x08u << 24) | qp->qp_num);

	double ns = hotpath_time(use_wr ? (bw ? hot_loop_bw_wr : hot_loop_lat_wr) : bw ? hot_loop_bw : hot_loop_lat, iters);
	uint32_t sq_pi = be32toh(dvqp.dbrec[MLX5_SND_DBR]) & 0xffff;
	printf("case=%s iters=%llu ns_per_op=%.2f completions=%llu sq_pi=%u last_wr_id=%llu impl=libmlx5 sq_wqe_cnt=%u ncqe=%u qpn=0x%x\n",
	       which, (unsigned long long)iters, ns / iters, (unsigned long long)completions, sq_pi,
	       (unsigned long long)last_wr_id, dvqp.sq.wqe_cnt, D.ncqe, qp->qp_num);
	hotpath_close(&h);
	return 0;
}
