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

#define TX_DEPTH 128   /* perftest bw default */
#define CQ_MOD 100     /* perftest bw default: one signaled WR per 100 */
#define POLL_BATCH 16  /* perftest CTX_POLL_BATCH */
#define MSG_SIZE 64
#define REMOTE_VA 0x00007f0012340000ULL
#define RKEY 0x0000abcdU

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
			if (sig) dev_req_cqe(&D, (uint16_t)scnt); /* every WQE is one WQEBB */
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

/* a latency loop: every WR signaled, the device completes it, poll_cq(cq, 1) until it is seen */
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
		dev_req_cqe(&D, (uint16_t)i);
		int ne;
		do ne = ibv_poll_cq(cq, 1, &wc); while (ne == 0);
		if (ne < 0 || wc.status != IBV_WC_SUCCESS) die("poll_cq");
		last_wr_id = wc.wr_id; completions++;
	}
}

/* hot_loop_bw through the extended QP API: the same loop, the same WRs, posted one per
 * ibv_wr_start .. ibv_wr_complete (what perftest does per post when it uses the new post API) */
__attribute__((noinline)) void hot_loop_bw_wr(uint64_t iters)
{
	uint32_t lkey = mr->lkey; uint64_t addr = (uintptr_t)data;
	struct ibv_wc wc[POLL_BATCH];
	uint64_t scnt = 0, ccnt = 0;
	while (scnt < iters || ccnt < iters) {
		while (scnt < iters && scnt - ccnt < TX_DEPTH) {
			int sig = scnt % CQ_MOD == CQ_MOD - 1;
			ibv_wr_start(qpx);
			qpx->wr_id = scnt;
			qpx->wr_flags = sig ? IBV_SEND_SIGNALED : 0;
			ibv_wr_rdma_write(qpx, RKEY, REMOTE_VA);
			ibv_wr_set_sge(qpx, lkey, addr, MSG_SIZE);
			if (ibv_wr_complete(qpx)) die("wr_complete");
			if (sig) dev_req_cqe(&D, (uint16_t)scnt);
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

/* hot_loop_lat through the extended QP API */
__attribute__((noinline)) void hot_loop_lat_wr(uint64_t iters)
{
	uint32_t lkey = mr->lkey; uint64_t addr = (uintptr_t)data;
	struct ibv_wc wc;
	for (uint64_t i = 0; i < iters; i++) {
		ibv_wr_start(qpx);
		qpx->wr_id = i;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qpx, RKEY, REMOTE_VA);
		ibv_wr_set_sge(qpx, lkey, addr, MSG_SIZE);
		if (ibv_wr_complete(qpx)) die("wr_complete");
		dev_req_cqe(&D, (uint16_t)i);
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
	int bw = !strcmp(which, "bw") || !strcmp(which, "bw_wr");
	int use_wr = !strcmp(which, "bw_wr") || !strcmp(which, "lat_wr");
	if (!bw && strcmp(which, "lat") && strcmp(which, "lat_wr")) die("case must be bw, lat, bw_wr or lat_wr");
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
	if (!use_wr) {
		qp = ibv_create_qp(pd, &ia);
		if (!qp) die("ibv_create_qp");
	} else {
		/* the same QP, created through the extended call with the send ops the wr loops use */
		struct ibv_qp_init_attr_ex iax; memset(&iax, 0, sizeof iax);
		iax.qp_type = ia.qp_type; iax.send_cq = ia.send_cq; iax.recv_cq = ia.recv_cq; iax.cap = ia.cap;
		iax.pd = pd; iax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		iax.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
		qp = ibv_create_qp_ex(ctx, &iax);
		if (!qp) die("ibv_create_qp_ex");
		qpx = ibv_qp_to_qp_ex(qp);
		if (!qpx) die("ibv_qp_to_qp_ex");
	}
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) die("INIT");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR; a.path_mtu = IBV_MTU_4096; a.dest_qp_num = 0x000b2d; a.rq_psn = 0x000111; a.max_dest_rd_atomic = 16; a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1; a.ah_attr.port_num = 1; a.ah_attr.grh.sgid_index = 3; a.ah_attr.grh.hop_limit = 64;
	uint8_t dgid[16] = {0,0,0,0,0,0,0,0,0,0,0xff,0xff,192,168,1,2}; memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) die("RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS; a.sq_psn = 0x000222; a.timeout = 14; a.retry_cnt = 7; a.rnr_retry = 7; a.max_rd_atomic = 16;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)) die("RTS");

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

	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (use_wr) { if (bw) hot_loop_bw_wr(iters); else hot_loop_lat_wr(iters); }
	else if (bw) hot_loop_bw(iters); else hot_loop_lat(iters);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double ns = (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
	uint32_t sq_pi = be32toh(dvqp.dbrec[MLX5_SND_DBR]) & 0xffff;
	printf("case=%s iters=%llu ns_per_op=%.2f completions=%llu sq_pi=%u last_wr_id=%llu impl=libmlx5 sq_wqe_cnt=%u ncqe=%u qpn=0x%x\n",
	       which, (unsigned long long)iters, ns / iters, (unsigned long long)completions, sq_pi,
	       (unsigned long long)last_wr_id, dvqp.sq.wqe_cnt, D.ncqe, qp->qp_num);
	ibv_destroy_qp(qp); ibv_destroy_cq(cq); ibv_dereg_mr(mr); ibv_dealloc_pd(pd); ibv_close_device(ctx);
	ibv_free_device_list(l);
	return 0;
}
