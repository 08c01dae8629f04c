/* The measured loops, and the set-up around them, of the two hot-path harnesses (tests/mlx5-oracle/hotpath/src/hotpath.c,
 * tests/rxe-oracle/hotpath/src/hotpath.c), the twins of providers/examples/common/hotpath.rs.
 * Included once by each harness, after it has defined:
 *   qp, cq, mr, data   the objects the loops post to and poll (static globals);
 *   completions, last_wr_id   what the loops count (static uint64_t);
 *   die(const char *)  report and exit;
 *   peer_complete(uint64_t n)  the other side (device or kernel) completes signaled WR n.
 * hot_loop_bw / hot_loop_lat are the functions callgrind collects (run.sh --toggle-collect);
 * the set-up (hotpath_open, hotpath_to_rts, hotpath_close) is the same on both sides but for
 * the connection's values.
 * Own code; uses only the public verbs API. */
#ifndef ORACLE_HOTPATH_LOOPS_H
#define ORACLE_HOTPATH_LOOPS_H

#define TX_DEPTH 128   /* perftest bw default */
#define CQ_MOD 100     /* perftest bw default: one signaled WR per 100 */
#define POLL_BATCH 16  /* perftest CTX_POLL_BATCH */
#define MSG_SIZE 64
#define REMOTE_VA 0x00007f0012340000ULL
#define RKEY 0x0000abcdU

/* Macros, not inline functions, so that each loop compiles as the one function it was
 * written as (inline helpers move gcc's register choices and cost an Ir or two per op). */

/* the one WR every post carries: a 64-B RDMA WRITE of `data`, one SGE, not inline */
#define HOTPATH_RDMA_WRITE(wr, sge) \
	struct ibv_sge sge = { .addr = (uintptr_t)data, .length = MSG_SIZE, .lkey = mr->lkey }; \
	struct ibv_send_wr wr, *bad; \
	memset(&wr, 0, sizeof wr); \
	wr.sg_list = &sge; wr.num_sge = 1; wr.opcode = IBV_WR_RDMA_WRITE; \
	wr.wr.rdma.remote_addr = REMOTE_VA; wr.wr.rdma.rkey = RKEY

/* the bw loop's poll: a batch of POLL_BATCH into wc[], each completion retiring CQ_MOD WRs */
#define HOTPATH_POLL_BATCH(wc, ccnt) do { \
	int ne = ibv_poll_cq(cq, POLL_BATCH, wc); \
	if (ne < 0) die("poll_cq"); \
	for (int i = 0; i < ne; i++) { \
		if (wc[i].status != IBV_WC_SUCCESS) die("completion status"); \
		last_wr_id = wc[i].wr_id; \
	} \
	completions += ne; ccnt += (uint64_t)ne * CQ_MOD; \
} while (0)

/* the lat loop's poll: poll_cq(cq, 1) into wc until the one completion is seen */
#define HOTPATH_POLL_ONE(wc) do { \
	int ne; \
	do ne = ibv_poll_cq(cq, 1, &wc); while (ne == 0); \
	if (ne < 0 || wc.status != IBV_WC_SUCCESS) die("poll_cq"); \
	last_wr_id = wc.wr_id; completions++; \
} while (0)

/* perftest's BW loop (run_iter_bw) around POST(scnt, sig), which posts WR scnt (signaled if sig):
 * post while fewer than TX_DEPTH outstanding, one WR in CQ_MOD signaled, poll a batch of
 * POLL_BATCH, each completion retires CQ_MOD WRs. */
#define HOTPATH_BW_LOOP(iters, POST) do { \
	struct ibv_wc wc_[POLL_BATCH]; \
	uint64_t scnt = 0, ccnt = 0; \
	while (scnt < (iters) || ccnt < (iters)) { \
		while (scnt < (iters) && scnt - ccnt < TX_DEPTH) { \
			int sig = scnt % CQ_MOD == CQ_MOD - 1; \
			POST(scnt, sig); \
			if (sig) peer_complete(scnt); \
			scnt++; \
		} \
		if (ccnt < (iters)) HOTPATH_POLL_BATCH(wc_, ccnt); \
	} \
} while (0)

/* a latency loop around POST(i), which posts signaled WR i: the other side completes it,
 * poll_cq(cq, 1) until it is seen */
#define HOTPATH_LAT_LOOP(iters, POST) do { \
	struct ibv_wc wc_; \
	for (uint64_t i = 0; i < (iters); i++) { \
		POST(i); \
		peer_complete(i); \
		HOTPATH_POLL_ONE(wc_); \
	} \
} while (0)

/* the verbs API posts: ibv_post_send of the prepared wr */
#define HOTPATH_POST_BW(id, sig) do { \
	wr.wr_id = (id); \
	wr.send_flags = (sig) ? IBV_SEND_SIGNALED : 0; \
	if (ibv_post_send(qp, &wr, &bad)) die("post_send"); \
} while (0)
#define HOTPATH_POST_LAT(id) do { \
	wr.wr_id = (id); \
	if (ibv_post_send(qp, &wr, &bad)) die("post_send"); \
} while (0)

__attribute__((noinline)) void hot_loop_bw(uint64_t iters)
{
	HOTPATH_RDMA_WRITE(wr, sge);
	HOTPATH_BW_LOOP(iters, HOTPATH_POST_BW);
}

__attribute__((noinline)) void hot_loop_lat(uint64_t iters)
{
	HOTPATH_RDMA_WRITE(wr, sge);
	wr.send_flags = IBV_SEND_SIGNALED;
	HOTPATH_LAT_LOOP(iters, HOTPATH_POST_LAT);
}

/* what hotpath_open makes besides the globals data, mr and cq */
struct hotpath_objs { struct ibv_device **list; struct ibv_context *ctx; struct ibv_pd *pd; };

/* The registered buffer `data` (8 KiB of 0x5a, page aligned, mr), the first device's context and
 * PD, the CQ of TX_DEPTH * 2 entries, and *ia filled for the RC QP both sides create (TX_DEPTH
 * sends and 16 receives, one SGE each, no inline data) for the harness to create. */
static void hotpath_open(struct hotpath_objs *o, struct ibv_qp_init_attr *ia)
{
	if (posix_memalign((void **)&data, 4096, 8192)) die("buffer");
	memset(data, 0x5a, 8192);
	int n; o->list = ibv_get_device_list(&n);
	if (!o->list || !n) die("no device (run through run.sh: LD_PRELOAD shim + SYSFS_PATH)");
	o->ctx = ibv_open_device(o->list[0]);
	if (!o->ctx) die("ibv_open_device");
	o->pd = ibv_alloc_pd(o->ctx);
	mr = o->pd ? ibv_reg_mr(o->pd, data, 8192, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ) : NULL;
	if (!o->pd || !mr) die("pd/mr");
	cq = ibv_create_cq(o->ctx, TX_DEPTH * 2, NULL, NULL, 0);
	if (!cq) die("cq");
	memset(ia, 0, sizeof *ia);
	ia->qp_type = IBV_QPT_RC; ia->send_cq = cq; ia->recv_cq = cq;
	ia->cap.max_send_wr = TX_DEPTH; ia->cap.max_recv_wr = 16; ia->cap.max_send_sge = 1; ia->cap.max_recv_sge = 1;
	ia->cap.max_inline_data = 0;
}

/* qp to RTS, as perftest moves it: INIT, RTR towards dest_qpn over a RoCE path (`mtu`, the GID at
 * sgid_index, peer ::ffff:192.168.1.2), RTS */
static void hotpath_to_rts(enum ibv_mtu mtu, uint32_t dest_qpn, uint8_t sgid_index)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) die("INIT");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR; a.path_mtu = mtu; a.dest_qp_num = dest_qpn; a.rq_psn = 0x111; a.max_dest_rd_atomic = 16; a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1; a.ah_attr.port_num = 1; a.ah_attr.grh.sgid_index = sgid_index; a.ah_attr.grh.hop_limit = 64;
	uint8_t dgid[16] = {0,0,0,0,0,0,0,0,0,0,0xff,0xff,192,168,1,2}; memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) die("RTR");
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS; a.sq_psn = 0x222; a.timeout = 14; a.retry_cnt = 7; a.rnr_retry = 7; a.max_rd_atomic = 16;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC)) die("RTS");
}

/* ns that loop(iters) took */
static double hotpath_time(void (*loop)(uint64_t), uint64_t iters)
{
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	loop(iters);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec);
}

static void hotpath_close(struct hotpath_objs *o)
{
	ibv_destroy_qp(qp); ibv_destroy_cq(cq); ibv_dereg_mr(mr); ibv_dealloc_pd(o->pd); ibv_close_device(o->ctx);
	ibv_free_device_list(o->list);
}

#endif
